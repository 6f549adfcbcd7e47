"""The deploy agent's steps, in order, and its command line (what the installer's init runs).

    config -> verify manifest -> pick disk -> stream + hash + read back -> seed -> grow root
           -> UEFI boot entry -> report "imaged" -> reboot

Any failure reports "failed" with the step and the reason, prints it on the console and halts
(the machine stays up, showing it, and is not rebooted into a disk that was not imaged). A
report is not a machine action, so the final one is retried; nothing that writes the disk is.
"""
import argparse
import json
import os
import subprocess
import sys
import time
import urllib.request

from gpufleet.deploy import gpt
from gpufleet.deploy.disks import list_disks
from gpufleet.deploy.errors import DeployError
from gpufleet.deploy.fetch import Fetcher
from gpufleet.deploy.hints import pick_disk
from gpufleet.deploy.seed import SEED_PARTITION, build_seed, write_seed
from gpufleet.deploy.write import HEADER, write_image

__all__ = ["ROOT_PARTITION", "ESP_PARTITION", "AgentConfig", "Reporter", "Agent", "main"]

ROOT_PARTITION = "gpufleet-root"
ESP_PARTITION = "gpufleet-esp"
SHIM = "\\EFI\\debian\\shimx64.efi"
_REQUIRED = ("node", "image_url", "root_device", "seed")


class AgentConfig:
    """The per-node install order, validated before anything is downloaded."""

    def __init__(self, data, source="config"):
        if not isinstance(data, dict):
            raise DeployError("config", "%s is not a JSON object; fix: hand the agent the config "
                              "the controller writes" % source)
        missing = [key for key in _REQUIRED if not data.get(key)]
        if missing:
            raise DeployError("config", "%s lacks %s; fix: hand the agent the config the "
                              "controller writes" % (source, ", ".join(missing)))
        self.node = str(data["node"])
        self.image_url = str(data["image_url"])
        self.image_version = data.get("image_version")
        self.root_device = data["root_device"]
        seed = data["seed"] if isinstance(data["seed"], dict) else {}
        self.seed = build_seed(seed.get("hostname"), seed.get("ssh_key"), seed.get("address"),
                               seed.get("gateway"), seed.get("dns") or ())
        callback = data.get("callback") or {}
        self.callback_url = callback.get("url")
        self.callback_token = callback.get("token")
        self.allow_http = data.get("allow_http") is True
        self.grow_root = data.get("grow_root", True) is not False
        self.boot_entry = data.get("boot_entry", True) is not False


class Reporter:
    """Progress and outcome to the controller's callback (Bearer token) and to the console."""

    def __init__(self, node, url=None, token=None, context=None, console=None, post=None,
                 clock=time.monotonic):
        self.node = node
        self.url = url
        self.token = token
        self.context = context
        self.console = console or (lambda line: print(line, file=sys.stderr, flush=True))
        self._post = post or self._urlopen_post
        self.clock = clock
        self._started = clock()
        self._last = None

    def _urlopen_post(self, body):
        request = urllib.request.Request(self.url, data=body, method="POST", headers={
            "Content-Type": "application/json", "Authorization": "Bearer %s" % self.token})
        with urllib.request.urlopen(request, timeout=30, context=self.context) as rsp:  # noqa: S310
            return rsp.status

    def send(self, state, step, detail=None, attempts=1):
        event = {"node": self.node, "state": state, "step": step,
                 "seconds": round(self.clock() - self._started, 1)}
        if detail:
            event.update(detail)
        self.console("gpufleet-installer %s [+%ss]: %s %s%s" % (self.node, event["seconds"], state, step,
                                                         (" " + json.dumps(detail, sort_keys=True)) if detail else ""))
        if not self.url:
            return False
        body = json.dumps(event, sort_keys=True).encode("utf-8")
        for attempt in range(attempts):
            try:
                self._post(body)
                return True
            except (OSError, ValueError) as exc:
                self.console("gpufleet-installer %s: callback failed (%s)%s" % (
                    self.node, exc, ", retrying" if attempt + 1 < attempts else ""))
                if attempt + 1 < attempts:
                    time.sleep(min(30, 2 ** attempt))
        return False

    def progress(self, done, total):
        """Throttled: at most one report per 10 s and once at the end."""
        now = self.clock()
        if done < total and self._last is not None and now - self._last < 10:
            return
        self._last = now
        self.send("running", "write", {"bytes": done, "total": total})


def _partition_device(disk, number):
    # /dev/nvme0n1 -> /dev/nvme0n1p2 ; /dev/sda -> /dev/sda2 (the kernel's naming rule)
    return "%s%s%d" % (disk, "p" if disk[-1].isdigit() else "", number)


class Agent:
    """Runs the install for one config; every side effect goes through ``run`` or the fetcher."""

    def __init__(self, config, public_key_pem, fetcher, reporter, run=subprocess.run,
                 efi_dir="/sys/firmware/efi", by_path_folder="/dev/disk/by-path"):
        self.config = config
        self.public_key_pem = public_key_pem
        self.fetcher = fetcher
        self.reporter = reporter
        self.run = run
        self.efi_dir = efi_dir
        self.by_path_folder = by_path_folder

    def _tool(self, step, argv):
        try:
            done = self.run(argv, capture_output=True, text=True, timeout=600, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise DeployError(step, "%s did not run (%s); fix: the installer image lacks it" % (argv[0], exc))
        if done.returncode != 0:
            raise DeployError(step, "%s exited %d: %s" % (" ".join(argv), done.returncode,
                                                          (done.stderr or done.stdout or "").strip()[-400:]))
        return done.stdout

    def install(self):
        """The whole install; returns the summary reported as "imaged"."""
        cfg = self.config
        self.reporter.send("running", "verify manifest", {"image": cfg.image_url})
        manifest, _, _ = self.fetcher.verified_manifest(cfg.image_url, self.public_key_pem, cfg.image_version)
        artifact = manifest["artifact"]
        disk = pick_disk(list_disks(self.run, self.by_path_folder), cfg.root_device)
        needed = int(artifact.get("disk_bytes") or artifact["size"])
        if disk["size"] < needed:
            raise DeployError("root device hints", "disk %s holds %d bytes, the image needs %d; fix: "
                              "point root_device at a larger disk" % (disk["name"], disk["size"], needed))
        self.reporter.send("running", "write", {"disk": disk["name"], "total": artifact["size"]})
        written = write_image(self.fetcher.blocks(cfg.image_url), disk["name"], artifact["size"],
                              artifact["sha256"], compressed=artifact["name"].endswith(".gz"),
                              progress=self.reporter.progress)
        head = self._head(disk["name"])
        write_seed(disk["name"], gpt.find(head, SEED_PARTITION), cfg.seed)
        self.reporter.send("running", "seed", {"hostname": cfg.seed["hostname"]})
        if cfg.grow_root:
            self._grow(disk["name"], gpt.find(head, ROOT_PARTITION)["number"])
        boot = self._boot_entry(disk["name"], gpt.find(head, ESP_PARTITION)["number"], manifest["version"])
        summary = {"version": manifest["version"], "build_id": manifest["build_id"],
                   "disk": disk["name"], "serial": disk.get("serial"), "sha256": written["sha256"],
                   "image_bytes": written["image_bytes"], "zeroed_bytes": written["zeroed_bytes"],
                   "write_seconds": written["seconds"], "boot_entry": boot}
        return summary

    @staticmethod
    def _head(disk):
        fd = os.open(disk, os.O_RDONLY)
        try:
            return os.pread(fd, HEADER, 0)
        finally:
            os.close(fd)

    def _grow(self, disk, number):
        """Backup GPT to the disk's end, root partition to the rest of the disk, then its ext4."""
        self.reporter.send("running", "grow root", {"partition": number})
        self._tool("grow root", ["sgdisk", "--move-second-header", disk])
        self._tool("grow root", ["growpart", disk, str(number)])
        part = _partition_device(disk, number)
        self._tool("grow root", ["e2fsck", "-f", "-p", part])
        self._tool("grow root", ["resize2fs", part])

    def _boot_entry(self, disk, esp_number, version):
        """A UEFI boot entry for shim, first in BootOrder; None on legacy BIOS (none to make)."""
        if not self.config.boot_entry or not os.path.isdir(self.efi_dir):
            return None
        self._tool("boot entry", ["efibootmgr", "--quiet", "--create", "--disk", disk, "--part",
                                  str(esp_number), "--label", "gpufleet %s" % version, "--loader", SHIM])
        return "gpufleet %s" % version


def _load_config(source, fetcher):
    if source.startswith(("http://", "https://")):
        body = fetcher.get(source, 1 << 20)
    else:
        try:
            with open(source, "rb") as handle:
                body = handle.read(1 << 20)
        except OSError as exc:
            raise DeployError("config", "cannot read %s (%s); fix: check the installer medium" % (source, exc.strerror))
    try:
        return json.loads(body.decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise DeployError("config", "%s is not JSON (%s)" % (source, exc))


def _kernel_arg(name, cmdline="/proc/cmdline"):
    try:
        with open(cmdline) as handle:
            words = handle.read().split()
    except OSError:
        return None
    for word in words:
        if word.startswith(name + "="):
            return word.split("=", 1)[1]
    return None


def main(argv=None):
    parser = argparse.ArgumentParser(prog="gpufleet-deploy-agent", description=(
        "Write the signed whole-disk image to the disk the root-device hints pick, seed it and "
        "make it the next boot. Exit 0: imaged (the caller reboots); 1: failed, reason printed."))
    parser.add_argument("--config", help="path or URL of the node's install config (JSON); "
                        "default: the kernel argument gpufleet.config=")
    parser.add_argument("--ca", help="the pinned CA certificate (PEM) for https")
    parser.add_argument("--image-key", required=True, help="the image signer's public key (PEM)")
    args = parser.parse_args(argv)
    console = lambda line: print(line, file=sys.stderr, flush=True)  # noqa: E731
    reporter = Reporter("unknown", console=console)
    try:
        source = args.config or _kernel_arg("gpufleet.config")
        if not source:
            raise DeployError("config", "no config given; fix: pass --config or the kernel "
                              "argument gpufleet.config=URL")
        bootstrap = Fetcher(ca_file=args.ca, allow_http=False)
        data = _load_config(source, bootstrap)
        config = AgentConfig(data, source)
        fetcher = Fetcher(ca_file=args.ca, allow_http=config.allow_http)
        reporter = Reporter(config.node, config.callback_url, config.callback_token, fetcher.context,
                            console=console)
        try:
            with open(args.image_key, "rb") as handle:
                key = handle.read()
        except OSError as exc:
            raise DeployError("config", "cannot read the image key %s (%s)" % (args.image_key, exc.strerror))
        summary = Agent(config, key, fetcher, reporter).install()
    except DeployError as exc:
        reporter.send("failed", exc.step, {"reason": exc.msg}, attempts=5)
        return 1
    reporter.send("imaged", "done", summary, attempts=5)
    return 0


if __name__ == "__main__":
    sys.exit(main())
