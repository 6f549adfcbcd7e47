"""The gpufleet.baremetal.fabric_sets filter (playbooks/tasks/fabric_sets.yml), through Ansible's templating."""
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template

from ansible_collections.gpufleet.baremetal.plugins.filter.fabric_sets import FilterModule

EXPRESSION = "{{ all | gpufleet.baremetal.fabric_sets(hostvars, play, 2, peers) }}"


def _render(**variables):
    return Templar(loader=DataLoader(), variables=variables).template(trust_as_template(EXPRESSION))


def test_the_collection_offers_the_filter():
    assert list(FilterModule().filters()) == ["fabric_sets"]


def test_a_member_whose_peer_failed_its_gpu_phase_is_not_run_and_a_peer_outside_the_inventory_is_ignored():
    hostvars = {
        "n1": {"gpufleet_step": {"state": "validating"}, "gpufleet_failure_reason": "acceptance gate failed at phase gpu",
               "gpufleet_gate": {"verdict": "fail", "failed_phase": "gpu"}},
        "n2": {"gpufleet_step": {"state": "validating"}},
    }
    cut = _render(all=["n1", "n2"], hostvars=hostvars, play=["n2"], peers=["gone"])
    assert cut["validated"] == ["n2"] and cut["sets"] == [["n2"]]
    assert cut["not_run"]["n2"].startswith("not run: fabric set short: peer n1 failed its gpu phase; fix: ")


def test_a_peer_offered_in_the_inventory_completes_the_set():
    hostvars = {"n1": {"gpufleet_step": {"state": "validating"}, "gpufleet_fabric_set": "su1"},
                "n2": {"gpufleet_step": {"state": "validating"}, "gpufleet_fabric_set": "su1"},
                "p1": {"gpufleet_fabric_set": "su1"}}
    cut = _render(all=["n1", "n2"], hostvars=hostvars, play=["n1"], peers=["p1"])   # n2 dropped as unreachable
    assert cut["sets"] == [["n1", "p1"]] and cut["not_run"] == {}
