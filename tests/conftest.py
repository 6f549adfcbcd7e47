"""Tests import the collection exactly as Ansible and the controller package do.

The symlink under build/ is the one ``make collection`` creates; ANSIBLE_COLLECTIONS_PATH
points at it (unless the caller set one), and importing ``gpufleet`` installs Ansible's
collection loader over that path (see gpufleet.collection). ``tests`` and ``lab`` import
from the checkout through pytest.ini's ``pythonpath``.
"""
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COLLECTIONS = os.path.join(ROOT, "build", "collections")
LINK = os.path.join(COLLECTIONS, "ansible_collections", "gpufleet", "baremetal")
SHARED_FIXTURES = os.path.normpath(os.path.join(ROOT, "..", "shared", "fixtures"))

if not os.path.lexists(LINK):
    os.makedirs(os.path.dirname(LINK), exist_ok=True)
    os.symlink(os.path.join("..", "..", "..", ".."), LINK)
os.environ.setdefault("ANSIBLE_COLLECTIONS_PATH", COLLECTIONS)

import gpufleet  # noqa: E402,F401  (installs the collection loader)

# Property tests explore new random inputs on a developer's machine; in CI (GPUFLEET_CI=1) they
# replay a fixed sequence, so a red CI is a change's fault and reproducible, never the dice.
# Bugs found locally get a named regression case (see tests/unit/lab/twin/test_lab_twin.py).
from hypothesis import settings as _hypothesis_settings  # noqa: E402

_hypothesis_settings.register_profile("ci", derandomize=True)
if os.environ.get("GPUFLEET_CI"):
    _hypothesis_settings.load_profile("ci")


# `make test` runs on two pytest-xdist workers (``-n 2``), whole groups at a time. The tests
# that use the lab (its containers, BMCs and Slurm, build/lab, the lab image under
# build/images) form one group: one worker runs them all, in file order, as a single process
# did (the controller scenarios build on each other's state). Molecule's scenarios reuse
# container names across its plain, systemd and Kubernetes drivers: a second group. Every
# other file is a group of its own (its tests share module fixtures and counters, e.g. the
# property tests' "inputs tried"). Files under the lab's folders that say "without the lab"
# run beside it.
# A scheduler of our own, not xdist's ``--dist loadgroup``: with pytest 9.2 its ``xdist_group``
# marks group nothing (xdist 3.8 renames ``item._nodeid``, which pytest 9.2 no longer reads).
LAB_TESTS = ("tests/integration/controller/", "tests/integration/lab/",
             "tests/integration/faults/test_node_faults.py", "tests/integration/gate/test_gate_lab.py",
             "tests/integration/image/test_lab_build.py")


def xdist_group_of(nodeid):
    """The group a test runs in: 'lab', 'molecule' or its file's path."""
    path = nodeid.split("::")[0]
    if path.startswith(LAB_TESTS):
        return "lab"
    if path.startswith("tests/integration/roles/"):
        return "molecule"
    if path.startswith("tests/integration/machine/"):
        return "machine"  # one installer build folder and one TCG machine at a time
    return path


# The order groups are handed to the workers: the longest first (the lab on one worker, the
# machine node on the other), then Molecule, the other integration files and sanity, and the
# unit files last, short enough to fill whichever worker frees first. xdist's own order (most
# tests first) started the machine node a quarter of the way into the run, and a long group
# started late ends after the others.
GROUP_ORDER = ("lab", "machine", "molecule", "tests/integration/", "tests/sanity/", "tests/unit/")


def group_rank(nodeid):
    """Where a test's group comes in `make test`'s order (GROUP_ORDER); lower starts first."""
    group = xdist_group_of(nodeid)
    return next((rank for rank, prefix in enumerate(GROUP_ORDER) if group.startswith(prefix)), len(GROUP_ORDER))


def pytest_collection_modifyitems(items):
    # a stable sort: the lab's tests keep their file order (its scenarios build on each other's state)
    items.sort(key=lambda item: group_rank(item.nodeid))


@pytest.hookimpl(tryfirst=True)
def pytest_xdist_make_scheduler(config, log):
    from xdist.scheduler import LoadScopeScheduling

    class GroupScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid):
            return xdist_group_of(nodeid)

    config.option.loadscopereorder = False   # hand groups out in collection order (above)
    return GroupScheduling(config, log)


# The time budget of `make test`, by group, printed at its end (docs/benchmarks.md keeps the
# numbers; nothing asserts on them). Sums each test's setup + call + teardown time, so a group
# that ran beside another on the second worker shows its own cost, not the wall clock.
BUDGET_GROUPS = (("tests/unit/", "unit"), ("tests/sanity/", "sanity + lint"),
                 ("tests/integration/roles/", "Molecule"), ("tests/integration/machine/", "machine node"),
                 ("tests/integration/image/test_lab_build.py", "lab"), ("tests/integration/image/", "image"))
_budget = {}


def budget_group_of(nodeid):
    path = nodeid.split("::")[0]
    if xdist_group_of(nodeid) == "lab":
        return "lab"
    for prefix, name in BUDGET_GROUPS:
        if path.startswith(prefix):
            return name
    return "other integration"


def pytest_runtest_logreport(report):
    group = budget_group_of(report.nodeid)
    _budget[group] = _budget.get(group, 0.0) + (report.duration or 0.0)


def pytest_terminal_summary(terminalreporter):
    if not _budget:
        return
    terminalreporter.section("time by group (sum of test durations)")
    for group, seconds in sorted(_budget.items(), key=lambda item: -item[1]):
        terminalreporter.write_line("%-18s %7.0f s  (%4.1f min)" % (group, seconds, seconds / 60))
