"""gpufleet.deploy.orders: the per-node install order, checked by the agent's own parser."""
import json
import os
import stat

import pytest

from gpufleet.deploy.agent import AgentConfig
from gpufleet.deploy.errors import DeployError
from gpufleet.deploy.orders import canonical_uuid, install_order, new_token, write_order

SEED = {"hostname": "gpu-r42-01", "ssh_key": "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGsomekey ctl"}
UUID = "4C4C4544-0042-3510-8048-B4C04F4A3332"


def order(**over):
    args = dict(node="gpu-r42-01", image_url="https://images.example/v1/v1.disk.raw.gz",
                root_device={"serial": "S6EWNX0T123456"}, seed=SEED,
                callback_url="https://ctl.example:8443/v1/nodes/gpu-r42-01/events", token=new_token(),
                image_version="v1")
    args.update(over)
    return install_order(**args)


def test_an_order_is_what_the_agent_reads():
    made = order()
    parsed = AgentConfig(made)
    assert parsed.node == "gpu-r42-01" and parsed.callback_url.endswith("/events")
    assert parsed.callback_token == made["callback"]["token"] and len(made["callback"]["token"]) >= 40
    assert parsed.allow_http is False and parsed.grow_root and parsed.boot_entry


def test_each_order_gets_its_own_token():
    assert order()["callback"]["token"] != order()["callback"]["token"]


@pytest.mark.parametrize("over,fragment", [
    ({"root_device": {"colour": "blue"}}, "colour"),
    ({"seed": {"hostname": "", "ssh_key": SEED["ssh_key"]}}, "hostname"),
    ({"callback_url": "http://ctl.example/v1/nodes/x/events"}, "not https"),
    ({"token": ""}, "no callback URL or token"),
    ({"image_url": ""}, "image_url"),
])
def test_a_bad_order_fails_on_the_controller_naming_the_field(over, fragment):
    with pytest.raises(DeployError) as err:
        order(**over)
    assert fragment in err.value.msg


def test_the_uuid_is_canonical_and_a_non_uuid_is_refused():
    assert canonical_uuid(UUID) == UUID.lower()
    with pytest.raises(DeployError, match="not a UUID"):
        canonical_uuid("r42n01")


def test_the_order_file_is_written_whole_and_readable_only_by_its_owner(tmp_path):
    made = order()
    path = write_order(str(tmp_path / "orders"), UUID, made)
    assert os.path.basename(path) == UUID.lower() + ".json"
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert json.load(open(path)) == made
    assert [n for n in os.listdir(tmp_path / "orders") if n.startswith(".")] == []   # no temp left
