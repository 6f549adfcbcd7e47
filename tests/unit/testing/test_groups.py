"""How `make test` splits its tests: the worker groups and the time-budget groups (tests/conftest.py)."""
import pytest

from tests.conftest import budget_group_of, group_rank, xdist_group_of


@pytest.mark.parametrize("nodeid, worker_group, budget_group", [
    ("tests/integration/controller/test_gang_lab.py::test_x", "lab", "lab"),
    ("tests/integration/image/test_lab_build.py::test_x", "lab", "lab"),
    ("tests/integration/image/test_templates.py::test_x", "tests/integration/image/test_templates.py", "image"),
    ("tests/integration/roles/test_molecule.py::test_x[node_labels]", "molecule", "Molecule"),
    ("tests/integration/machine/test_installer_boot.py::test_x", "machine", "machine node"),
    ("tests/integration/machine/test_redfish_machine.py::test_x", "machine", "machine node"),
    ("tests/unit/gpufleet/deploy/test_write.py::test_x", "tests/unit/gpufleet/deploy/test_write.py", "unit"),
    ("tests/sanity/test_collection.py::test_x", "tests/sanity/test_collection.py", "sanity + lint"),
    ("tests/integration/gate/test_fabric_peer.py::test_x", "tests/integration/gate/test_fabric_peer.py",
     "other integration"),
])
def test_each_test_has_one_worker_group_and_one_budget_group(nodeid, worker_group, budget_group):
    assert xdist_group_of(nodeid) == worker_group
    assert budget_group_of(nodeid) == budget_group


def test_groups_are_handed_out_longest_first_and_the_lab_keeps_its_file_order():
    ids = ["tests/unit/gpufleet/deploy/test_write.py::test_x", "tests/sanity/test_collection.py::test_x",
           "tests/integration/attest/test_join_attestation.py::test_x",
           "tests/integration/controller/test_controller_lab.py::test_b",
           "tests/integration/machine/test_golden_machine.py::test_x",
           "tests/integration/roles/test_molecule.py::test_x[node_identity]",
           "tests/integration/controller/test_controller_lab.py::test_a", "tests/integration/lab/test_awx_slices.py::test_x"]
    assert sorted(ids, key=group_rank) == [
        "tests/integration/controller/test_controller_lab.py::test_b",
        "tests/integration/controller/test_controller_lab.py::test_a", "tests/integration/lab/test_awx_slices.py::test_x",
        "tests/integration/machine/test_golden_machine.py::test_x",
        "tests/integration/roles/test_molecule.py::test_x[node_identity]",
        "tests/integration/attest/test_join_attestation.py::test_x", "tests/sanity/test_collection.py::test_x",
        "tests/unit/gpufleet/deploy/test_write.py::test_x"]
