"""Install orders: the per-node config the installer fetches, written by the controller.

An order is exactly what the deploy agent reads (``agent.AgentConfig``), so it is validated by
the agent's own code before it is written: a bad order fails here, on the controller, not on a
machine booted into the installer. Each order carries a fresh one-time callback token; the
token is written only into the order file (mode 0600) and never returned in logs or results.
The installer finds its order by the machine's SMBIOS UUID (``gpufleet.config_base=URL``:
``URL/<uuid>.json``), so the file name is that UUID in its canonical form.
"""
import json
import os
import secrets
import tempfile
import uuid as uuid_mod

from gpufleet.deploy.agent import AgentConfig
from gpufleet.deploy.errors import DeployError
from gpufleet.deploy.hints import parse_hints

__all__ = ["new_token", "canonical_uuid", "install_order", "write_order", "write_private", "order_path"]


def new_token():
    """A one-time callback token (256 bits, URL-safe)."""
    return secrets.token_urlsafe(32)


def canonical_uuid(text):
    """The SMBIOS UUID as the installer reads it (lower case, hyphenated); DeployError otherwise."""
    try:
        return str(uuid_mod.UUID(str(text).strip()))
    except ValueError:
        raise DeployError("order", "system UUID %r is not a UUID; fix: use the UUID the BMC reports "
                          "(Redfish Systems/<id> UUID)" % (text,))


def install_order(node, image_url, root_device, seed, callback_url, token, image_version=None,
                  allow_http=False, grow_root=True, boot_entry=True):
    """-> the order dict, checked by the agent's own config parser and root-device hints."""
    order = {"node": node, "image_url": image_url, "image_version": image_version,
             "root_device": root_device, "seed": seed,
             "callback": {"url": callback_url, "token": token},
             "allow_http": allow_http is True, "grow_root": grow_root is not False,
             "boot_entry": boot_entry is not False}
    if not callback_url or not token:
        raise DeployError("order", "the order of %s has no callback URL or token; fix: pass both, so the "
                          "installer's progress and outcome reach the controller" % node)
    if not str(callback_url).startswith("https://") and not allow_http:
        raise DeployError("order", "callback URL %s of %s is not https; fix: serve the callback over TLS "
                          "(allow_http only in a lab)" % (callback_url, node))
    AgentConfig(order, source="the order of %s" % node)   # the agent's own checks, here
    parse_hints(root_device)
    return order


def order_path(folder, system_uuid):
    return os.path.join(folder, canonical_uuid(system_uuid) + ".json")


def write_private(path, data):
    """Write ``data`` (bytes) to ``path`` whole, mode 0600: a temporary file beside it, fsync'd,
    then renamed over it, so a reader in another process sees the old file or the new one. A
    missing folder is made, mode 0700."""
    folder = os.path.dirname(path) or "."
    os.makedirs(folder, mode=0o700, exist_ok=True)
    handle, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-", suffix=".part")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def write_order(folder, system_uuid, order):
    """Write ``<folder>/<uuid>.json`` atomically, mode 0600 (it holds the token). -> its path."""
    path = order_path(folder, system_uuid)
    return write_private(path, json.dumps(order, sort_keys=True).encode("utf-8"))
