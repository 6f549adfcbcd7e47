"""``gpufleet image``: list, validate, build, verify, sign, keygen, import, show and diff golden images.

Build tooling (Packer wrapper, pins, SBOM, provenance, import) lives in ``gpufleet.image``;
verification and signing live in the collection's ``plugins/module_utils/image`` (shared
with the ``image_verify`` module). This file only parses arguments and prints results.
"""
import json
import os
import subprocess
import sys

from gpufleet.collection import repo_path

NAME = "image"
HELP = "golden images: list, validate, build, verify, sign, keygen, import, disk, installer, show, diff"

LAB_KEY = os.path.join("build", "keys", "lab-signing.key")
# Modules of the controller package; every other name is the collection's image package.
_CONTROLLER_SIDE = ("build", "disk_build", "importer", "installer", "packer", "pins")
PASSPHRASE_ENV = "GPUFLEET_SIGNING_KEY_PASSPHRASE"


def _mu(name):
    """Import an image module on first use (keeps ``gpufleet --help`` fast)."""
    import importlib
    package = "gpufleet.image." if name in _CONTROLLER_SIDE else \
        "ansible_collections.gpufleet.baremetal.plugins.module_utils.image."
    return importlib.import_module(package + name)


def _packer_dir():
    return repo_path("packer")


def _versions_dir():
    return repo_path("packer", "versions")


def _images_dir():
    return repo_path("build", "images")


def _read(path):
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError as exc:
        raise _mu("errors").ImageError("Cannot read %s: %s. Check the path (build outputs are in build/images/<version>/)."
                                       % (path, exc.strerror or exc))


def _passphrase():
    value = os.environ.get(PASSPHRASE_ENV)
    return value.encode("utf-8") if value else None


def _public_key_for(path):
    """Accept a public key PEM, or a private key whose public half is then used."""
    data = _read(path)
    if b"PRIVATE KEY" in data:
        signing = _mu("signing")
        return signing.public_pem(signing.load_private_key(data, path, _passphrase()).public_key())
    return data


def cmd_list(args):
    pins_mod = _mu("pins")
    for version in pins_mod.list_versions(_versions_dir()):
        pins = pins_mod.load_pins(_versions_dir(), version)
        built = os.path.isfile(os.path.join(_images_dir(), version, "manifest.json"))
        print("%-12s %-10s %-6s %s" % (version, pins.data["profile"], "built" if built else "-", pins.data["description"]))
    return 0


def _offline_disk(path):
    digest = _mu("artifact").sha256_file(path)
    return {"disk_image_url": "file://" + os.path.abspath(path), "disk_image_checksum": "sha256:" + digest}


def cmd_validate(args):
    pins_mod, packer_mod = _mu("pins"), _mu("packer")
    versions = args.versions or pins_mod.list_versions(_versions_dir())
    builders = packer_mod.BUILDERS if args.builder == "all" else (args.builder,)
    packer = None if args.pins_only else packer_mod.Packer(_packer_dir())
    if packer:
        packer.fmt_check()
    work = repo_path("build", "image-validate")
    os.makedirs(work, exist_ok=True)
    for version in versions:
        pins = pins_mod.load_pins(_versions_dir(), version)
        print("pins ok: %s (%d packages, sha256 %s)" % (version, len(pins.packages), pins.sha256[:12]))
        if not packer:
            continue
        var_file = os.path.join(work, "%s.pkrvars.json" % version)
        with open(var_file, "wb") as handle:
            handle.write(_mu("manifest").canonical_json(pins_mod.render_pkrvars(pins, "validate", work)))
        for builder in builders:
            extra = _offline_disk(args.offline_disk_image) if builder == "qemu" and args.offline_disk_image else {}
            packer.validate(builder, var_file, extra)
            print("packer validate ok: %s x %s" % (version, builder))
    return 0


def _load_or_create_key(path, create, algorithm):
    signing = _mu("signing")
    if not os.path.isfile(path):
        if not create:
            raise _mu("errors").SignatureError("Signing key %s does not exist. Pass --key with your PEM key, or "
                                               "--generate-key to create one there." % path)
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        signing.write_keypair(signing.generate_key(algorithm), path, _pub_path(path), _passphrase())
        print("generated %s signing key %s (public: %s)" % (algorithm, path, _pub_path(path)))
    key = signing.load_private_key(_read(path), path, _passphrase())
    if not os.path.isfile(_pub_path(path)):
        # Verifiers need the public half; recreate it if only the private key was kept.
        with open(_pub_path(path), "wb") as handle:
            handle.write(signing.public_pem(key.public_key()))
        print("wrote public key %s" % _pub_path(path))
    return key


def _pub_path(private_path):
    base = private_path[:-4] if private_path.endswith(".key") else private_path
    return base + ".pub"


def _base_image_id(image):
    proc = subprocess.run(["docker", "image", "inspect", "-f", "{{.Id}}", image],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    if proc.returncode != 0:
        raise _mu("errors").PackerError("Base image %s is not in the local docker image store: %s. Build it with "
                                        "`make base-image`." % (image, proc.stderr.strip()))
    return proc.stdout.strip()


def cmd_build(args):
    pins = _mu("pins").load_pins(args.versions_dir or _versions_dir(), args.version)
    key = _load_or_create_key(args.key, args.generate_key, args.algorithm)
    base_id = _base_image_id(pins.data["base_image"]) if args.builder == "docker" else None
    out_dir = args.out or os.path.join(_images_dir(), args.version)
    builder = _mu("build").ImageBuilder(_mu("packer").Packer(_packer_dir()), pins, args.builder, out_dir, key,
                                        progress=lambda text: print("  " + text.strip(), flush=True),
                                        base_image_id=base_id)
    print("building %s with %s into %s (build id %s)" % (args.version, args.builder, out_dir, builder.build_id),
          flush=True)
    summary = builder.build(force=args.force)
    print(("reused verified build" if summary["reused"] else "built") + ": " + json.dumps(summary, indent=2, sort_keys=True))
    return 0


def cmd_verify(args):
    summary = _mu("verify").verify_image(args.manifest, _public_key_for(args.public_key), args.signature,
                                         args.artifact, args.expected_version, args.public_key)
    print("verified: " + json.dumps(summary, indent=2, sort_keys=True))
    return 0


def cmd_keygen(args):
    path = args.out
    if os.path.exists(path):
        raise _mu("errors").SignatureError("Key file %s already exists; refusing to overwrite it. Pick another path." % path)
    _load_or_create_key(path, True, args.algorithm)
    return 0


def cmd_sign(args):
    manifest_mod, signing = _mu("manifest"), _mu("signing")
    key = signing.load_private_key(_read(args.key), args.key, _passphrase())
    manifest = manifest_mod.parse_manifest(_read(args.manifest), args.manifest)
    public = key.public_key()
    manifest["signer"] = {"key_id": signing.key_id(public), "algorithm": signing.algorithm_of(public)}
    data = manifest_mod.canonical_json(manifest)
    with open(args.manifest, "wb") as handle:
        handle.write(data)
    with open(args.manifest + ".sig", "wb") as handle:
        handle.write(signing.sign(key, data))
    print("signed %s with key %s -> %s.sig" % (args.manifest, manifest["signer"]["key_id"], args.manifest))
    return 0


def cmd_import(args):
    summary = _mu("importer").import_verified(args.manifest, _public_key_for(args.public_key), args.tag,
                                              expected_version=args.expected_version)
    print("imported %s as %s (%s)" % (summary["artifact"], summary["tag"], summary["image_id"]))
    return 0


def cmd_show(args):
    manifest = _mu("manifest").parse_manifest(_read(args.manifest), args.manifest)
    view = dict((k, manifest.get(k)) for k in ("version", "build_id", "builder", "pins_sha256", "artifact", "release", "signer"))
    view["pins"] = manifest["pins"]
    view["package_count"] = len(manifest["packages"])
    print(json.dumps(view, indent=2, sort_keys=True))
    return 0


def cmd_diff(args):
    artifact = _mu("artifact")
    identical = artifact.sha256_file(args.first) == artifact.sha256_file(args.second)
    # Identical bytes cannot differ in any member; skip reading both tarballs.
    report = {"count": 0, "paths": []} if identical else \
        artifact.diff_tar_indexes(artifact.tar_index(args.first), artifact.tar_index(args.second))
    report["identical_sha256"] = identical
    json.dump(report, sys.stdout, indent=2, sort_keys=True)
    print()
    return 0


def cmd_installer(args):
    ca = _read(args.ca) if args.ca else None
    summary = _mu("installer").build_installer(
        os.path.abspath(args.out), _public_key_for(args.image_key), repo_path(), os.path.abspath(args.work),
        ca_pem=ca, kernel_args=args.kernel_arg,
        log=lambda line: print("installer: " + line, file=sys.stderr, flush=True))
    print(json.dumps(summary, indent=2, sort_keys=True))
    return 0


def cmd_disk(args):
    key = _mu("signing").load_private_key(_read(args.key), args.key, _passphrase())
    work = os.path.abspath(args.work or os.path.join(os.path.dirname(os.path.abspath(args.manifest)), "disk.work"))
    summary = _mu("disk_build").build_disk(os.path.abspath(args.manifest), key, args.size_mib, work)
    print("built and verified: " + json.dumps(summary, indent=2, sort_keys=True))
    return 0


def _add(sub, name, func, help_text):
    parser = sub.add_parser(name, help=help_text, description=help_text)
    parser.set_defaults(func=func)
    return parser


def register(parser):
    sub = parser.add_subparsers(dest="image_command", metavar="ACTION")
    _add(sub, "list", cmd_list, "list image versions (pin files) and whether they are built")
    p = _add(sub, "validate", cmd_validate, "validate pin files, packer fmt and packer validate per builder")
    p.add_argument("versions", nargs="*", help="versions to validate (default: all)")
    p.add_argument("--builder", choices=("docker", "qemu", "all"), default="all")
    p.add_argument("--pins-only", action="store_true", help="only validate pin files (no packer)")
    p.add_argument("--offline-disk-image", metavar="PATH",
                   help="validate the qemu source against this local disk image instead of the pinned URL")
    p = _add(sub, "build", cmd_build, "build, inventory, sign an image version (reuses a verified identical build)")
    p.add_argument("version")
    p.add_argument("--builder", choices=("docker", "qemu"), default="docker")
    p.add_argument("--out", help="output directory (default build/images/<version>)")
    p.add_argument("--versions-dir", help="folder of pin files to read <version>.yml from (default packer/versions)")
    p.add_argument("--key", default=LAB_KEY, help="PEM signing key (default %(default)s)")
    p.add_argument("--generate-key", action="store_true", help="create the signing key if it does not exist")
    p.add_argument("--algorithm", choices=("ed25519", "ecdsa-p256"), default="ed25519")
    p.add_argument("--force", action="store_true", help="rebuild even if a verified identical build exists")
    p = _add(sub, "verify", cmd_verify, "verify manifest signature and artifact digest; refuse anything else")
    p.add_argument("manifest")
    p.add_argument("--public-key", required=True, help="trusted PEM public key (or the private key)")
    p.add_argument("--signature", help="detached signature (default MANIFEST.sig)")
    p.add_argument("--artifact", help="artifact path (default: beside the manifest)")
    p.add_argument("--expected-version")
    p = _add(sub, "keygen", cmd_keygen, "generate an Ed25519 or ECDSA P-256 signing key pair (PEM)")
    p.add_argument("--out", required=True, help="private key path; the public key goes beside it as .pub")
    p.add_argument("--algorithm", choices=("ed25519", "ecdsa-p256"), default="ed25519")
    p = _add(sub, "sign", cmd_sign, "(re-)sign a manifest with your key; writes MANIFEST.sig")
    p.add_argument("manifest")
    p.add_argument("--key", required=True)
    p = _add(sub, "import", cmd_import, "verify, then docker import a rootfs artifact as an image")
    p.add_argument("manifest")
    p.add_argument("--public-key", required=True)
    p.add_argument("--tag", help="image name (default gpufleet/node:<version of the manifest>)")
    p.add_argument("--expected-version")
    p = _add(sub, "disk", cmd_disk, "make a built version's whole-disk UEFI image (same root, shim + GRUB, "
             "first-boot seed unit), signed like the rootfs, into <build>/disk/")
    p.add_argument("manifest", help="the rootfs build's manifest.json (verified first)")
    p.add_argument("--key", default=LAB_KEY, help="PEM signing key; its public half must verify the build "
                   "(default %(default)s)")
    p.add_argument("--size-mib", type=int, default=4096, help="the image's size; the agent grows the root "
                   "to the node's disk (default %(default)s)")
    p.add_argument("--work", help="scratch folder (default: <build>/disk.work, removed afterwards)")
    p = _add(sub, "installer", cmd_installer, "build the installer ISO (Debian kernel + a ramdisk running the "
             "deploy agent) that a BMC boots from virtual media")
    p.add_argument("--out", default=os.path.join("build", "installer", "installer.iso"),
                   help="ISO path (default %(default)s)")
    p.add_argument("--image-key", required=True, help="the image signer's public key (PEM; a private key's public "
                   "half is used): the only key the installer trusts")
    p.add_argument("--ca", help="the CA certificate (PEM) the installer trusts for https (none: https refused)")
    p.add_argument("--kernel-arg", action="append", default=[], metavar="ARG",
                   help="a kernel argument baked into the boot menu, e.g. gpufleet.config_base=https://ctl/deploy/")
    p.add_argument("--work", default=os.path.join("build", "installer", "work"),
                   help="work folder; the debootstrapped root is cached there (default %(default)s)")
    p = _add(sub, "show", cmd_show, "print the key facts of a manifest (unverified: use verify to trust it)")
    p.add_argument("manifest")
    p = _add(sub, "diff", cmd_diff, "compare two rootfs artifacts file by file (reproducibility report)")
    p.add_argument("first")
    p.add_argument("second")
    parser.set_defaults(func=lambda args: parser.print_help() or 2)
