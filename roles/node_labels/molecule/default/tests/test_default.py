"""Features from the inventory are published to the real slurmctld and select the node."""
import json

testinfra_hosts = ["gpufleet-mol-labels-node"]
WANTED = "emulated,image_2026.06.2,lab,rack_r1,sku_lab"


def test_controller_has_the_features(host):
    out = host.check_output("scontrol show node -o node01")
    assert "AvailableFeatures=%s " % WANTED in out and "ActiveFeatures=%s " % WANTED in out, out


def test_constraint_selects_the_node(host):
    assert host.check_output("timeout 60 srun -N1 -C 'sku_lab&lab' hostname") == "node01"


def test_unknown_feature_does_not_match(host):
    assert host.run("timeout 30 srun --immediate=5 -N1 -C sku_h100 hostname").rc != 0


def test_node_local_record(host):
    record = json.loads(host.file("/etc/gpufleet/labels.json").content_string)
    assert record["features"] == WANTED.split(",") and record["gres"] == ""
    assert record["k8s_labels"]["gpufleet.io/sku"] == "lab"
