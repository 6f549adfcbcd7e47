"""contrib/ci/github-actions/build-image.yml: every gpufleet command it runs parses with today's CLI."""
import os
import shlex

import pytest
import yaml

from gpufleet.main import build_parser

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
WORKFLOW = os.path.join(ROOT, "contrib", "ci", "github-actions", "build-image.yml")


def workflow():
    with open(WORKFLOW) as handle:
        return yaml.safe_load(handle)


def run_scripts(doc):
    return [(name, step["run"]) for name, job in doc["jobs"].items() for step in job["steps"] if "run" in step]


def gpufleet_commands(script):
    """argv after each ``gpufleet`` word (any path, after sudo), continuation lines joined."""
    commands = []
    for line in script.replace("\\\n", " ").splitlines():
        lexer = shlex.shlex(line, posix=True, punctuation_chars=True)   # quotes kept, operators split off
        lexer.whitespace_split = True
        words = []
        for word in list(lexer) + [";"]:
            if word and set(word) <= set(";&|()<>"):
                at = [i for i, w in enumerate(words) if os.path.basename(w) == "gpufleet"]
                if at:
                    commands.append(words[at[0] + 1:])
                words = []
            else:
                words.append(word)
    return commands


def all_commands():
    return [argv for _job, script in run_scripts(workflow()) for argv in gpufleet_commands(script)]


def test_the_splitter_finds_commands_behind_sudo_and_continuations():
    found = gpufleet_commands('echo hi && sudo -E .venv/bin/gpufleet image disk "m.json" \\\n  --key "$K"  # why\n')
    assert found == [["image", "disk", "m.json", "--key", "$K"]]


def test_it_builds_signs_verifies_and_makes_the_disk_and_the_installer():
    used = {tuple(argv[:2]) for argv in all_commands()}
    assert {("image", "build"), ("image", "disk"), ("image", "installer"), ("image", "verify")} <= used, used


@pytest.mark.parametrize("argv", all_commands(), ids=lambda argv: " ".join(argv[:2]))
def test_every_gpufleet_command_parses_with_the_cli(argv):
    args = build_parser().parse_args(argv)     # an unknown command or option exits here
    assert args.func is not None
    assert not getattr(args, "generate_key", False), "the signing key comes from the secret, never generated"


def test_the_signing_key_comes_from_a_secret_and_is_never_uploaded():
    doc = workflow()
    image = doc["jobs"]["image"]
    steps = image["steps"]
    keyed = [s for s in steps if "GPUFLEET_IMAGE_SIGNING_KEY" in str(s.get("env", {}))]
    assert keyed and "secrets.GPUFLEET_IMAGE_SIGNING_KEY" in str(keyed[0]["env"])
    assert "umask 077" in keyed[0]["run"] and "$RUNNER_TEMP" in keyed[0]["run"]
    uploads = [s for s in steps if s.get("uses", "").startswith("actions/upload-artifact")]
    assert uploads and all("key" not in s["with"]["path"] for s in uploads)
    removal = [s for s in steps if 'rm -rf "$RUNNER_TEMP/keys"' in s.get("run", "")]
    assert removal and removal[0].get("if") == "always()"
