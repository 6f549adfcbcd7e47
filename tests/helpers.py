"""Shared test helpers: where things are, and whether a required service is present.

In CI (``GPUFLEET_CI=1``) a missing docker daemon or tool is a failure, not a skip:
the suite must never pass by skipping what it was meant to prove.
"""
import os
import shutil
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# ../shared/fixtures beside the checkout; GPUFLEET_SHARED_FIXTURES points elsewhere (a git worktree
# lives one level deeper than the checkout the fixtures sit beside).
SHARED_FIXTURES = os.environ.get("GPUFLEET_SHARED_FIXTURES") or os.path.normpath(
    os.path.join(ROOT, "..", "shared", "fixtures"))
VENV_BIN = os.path.join(ROOT, ".venv", "bin")
IN_CI = os.environ.get("GPUFLEET_CI") == "1"


def need(condition, reason):
    """Skip locally, fail in CI, when a prerequisite is missing."""
    if condition:
        return
    if IN_CI:
        pytest.fail("prerequisite missing in CI: " + reason)
    pytest.skip(reason)


def need_tool(name):
    need(shutil.which(name) is not None, "%s is not installed" % name)


def need_docker():
    need_tool("docker")
    ok = subprocess.run(["docker", "info"], capture_output=True, check=False).returncode == 0
    need(ok, "the docker daemon is not running (start dockerd)")


def shared_fixture(*parts):
    """Path to a file in ../shared/fixtures; skips (never fails) when the folder is absent."""
    path = os.path.join(SHARED_FIXTURES, *parts)
    if not os.path.exists(path):
        pytest.skip("shared fixture not present: %s" % path)
    return path


BASE_IMAGE = os.environ.get("GPUFLEET_BASE_IMAGE", "gpufleet/debian-base:bookworm")


def ensure_base_image():
    """Build the debootstrap base image once per machine (about a minute); return its name."""
    need_docker()
    script = os.path.join(ROOT, "lab", "images", "base", "build.sh")
    proc = subprocess.run([script], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        pytest.fail("base image build failed:\n" + proc.stdout[-2000:] + proc.stderr[-2000:])
    return BASE_IMAGE
