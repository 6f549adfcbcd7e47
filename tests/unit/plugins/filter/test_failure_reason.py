"""The filters record_failure.yml and gang_member_reasons.yml call, through Ansible's templating."""
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template

from ansible_collections.gpufleet.baremetal.plugins.filter.failure_reason import FilterModule


def _render(expression, **variables):
    return Templar(loader=DataLoader(), variables=variables).template(trust_as_template(expression))


def test_the_collection_offers_the_three_filters():
    assert sorted(FilterModule().filters()) == ["connection_lost", "failure_reason", "lost_node_reason"]


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
