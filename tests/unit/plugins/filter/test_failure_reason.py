"""The filters record_failure.yml and gang_member_reasons.yml call, through Ansible's templating."""
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template

from ansible_collections.gpufleet.baremetal.plugins.filter.failure_reason import FilterModule


def _render(expression, **variables):
    return Templar(loader=DataLoader(), variables=variables).template(trust_as_template(expression))


def test_the_collection_offers_the_four_filters():
    assert sorted(FilterModule().filters()) == ["answer_unknown", "connection_lost", "failure_reason",
                                                "lost_node_reason"]


def test_a_cut_off_module_reads_as_a_node_that_lost_power_in_a_template():
    result = {"failed": True, "msg": "Module result deserialization failed: No start of json char found",
              "module_stdout": ""}
    power = {"facts": {"system": {"power_state": "Off"}}}
    assert _render("{{ r | gpufleet.baremetal.connection_lost }}", r=result) is True
    reason = _render("{{ r | gpufleet.baremetal.failure_reason('Run the acceptance gate', 'n1', 'validating', p) }}",
                     r=result, p=power)
    assert reason.startswith('n1 stopped answering during the acceptance gate (task "Run the acceptance gate"): '
                             "its BMC reports PowerState Off afterwards")
    assert _render("{{ 'n1' | gpufleet.baremetal.lost_node_reason('ready', p, 'gang g') }}", p=power).startswith(
        "n1 stopped answering during registration with the scheduler (gang g)")


def test_a_node_that_did_not_answer_the_probe_reads_as_lost_in_a_template():
    result = {"failed": True, "msg": "Gate report r.json is missing on n1 (MODULE FAILURE): the node is not admitted."}
    probe = {"failed": True, "msg": "timed out waiting for ping module test: MODULE FAILURE"}
    assert _render("{{ r | gpufleet.baremetal.answer_unknown }}", r=result) is True
    assert _render("{{ r | gpufleet.baremetal.connection_lost }}", r=result) is False
    assert _render("{{ r | gpufleet.baremetal.connection_lost(p) }}", r=result, p=probe) is True
    reason = _render("{{ r | gpufleet.baremetal.failure_reason('Fail when the gate report is missing', 'n1', 'ready', "
                     "{}, p) }}", r=result, p=probe)
    assert reason.startswith('n1 stopped answering during registration with the scheduler (task "Fail when the gate '
                             'report is missing"): its BMC was not read'), reason
