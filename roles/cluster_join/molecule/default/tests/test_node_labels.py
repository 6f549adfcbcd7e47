"""Features from the inventory are published to the real slurmctld and select the node;
the node's gres.conf names its 2 GPUs in a form slurmd accepts and the controller serves."""
import json

testinfra_hosts = ["gpufleet-mol-join-node"]
WANTED = "emulated,image_2026.06.2,lab,rack_r1,sku_lab"
GRES_LINE = "NodeName=node01 Name=gpu Type=h100 File=/dev/nvidia[0-1]"


def test_controller_has_the_features(host):
    out = host.check_output("scontrol show node -o node01")
    assert "AvailableFeatures=%s " % WANTED in out and "ActiveFeatures=%s " % WANTED in out, out


def test_constraint_selects_the_node(host):
    assert host.check_output("timeout 60 srun -N1 -C 'sku_lab&lab' hostname") == "node01"


def test_unknown_feature_does_not_match(host):
    assert host.run("timeout 30 srun --immediate=5 -N1 -C sku_h100 hostname").rc != 0


def test_node_local_record(host):
    record = json.loads(host.file("/etc/gpufleet/labels.json").content_string)
    assert record["features"] == WANTED.split(",") and record["gres"] == "gpu:h100:2"
    assert record["k8s_labels"]["gpufleet.io/sku"] == "lab"


def test_gres_conf_names_the_gpus(host):
    gres = host.file("/etc/slurm/gres.conf")
    assert gres.mode == 0o644 and gres.user == "root"
    lines = [line for line in gres.content_string.splitlines() if line and not line.startswith("#")]
    assert lines == [GRES_LINE]


def test_slurmd_accepts_the_gres_conf(host):
    # slurmd -G parses gres.conf beside the given slurm.conf (the one the controller served) and
    # stats every File=; it exits non-zero on a syntax error or a missing device.
    host.check_output("rm -rf /tmp/gres-check && mkdir /tmp/gres-check && "
                      "cp /var/spool/slurmd/conf-cache/slurm.conf /etc/slurm/gres.conf /tmp/gres-check/")
    result = host.run("slurmd -G -f /tmp/gres-check/slurm.conf -N node01")
    assert result.rc == 0, result.stderr
    assert "Gres Name=gpu Type=h100 Count=2" in result.stderr and "File=/dev/nvidia[0-1]" in result.stderr


def test_controller_serves_the_rendered_line(host):
    # Configless slurmd reads the controller's gres.conf (fetched into its conf-cache).
    assert GRES_LINE in host.file("/var/spool/slurmd/conf-cache/gres.conf").content_string.splitlines()


def test_gpu_job_gets_both_gpus(host):
    out = host.check_output("timeout 60 srun -N1 -w node01 --gres=gpu:h100:2 printenv CUDA_VISIBLE_DEVICES")
    assert out == "0,1"


def test_refused_runs_left_no_gres_conf_for_missing_devices(host):
    assert not host.file("/tmp/gpufleet-mol-gres-missing.conf").exists


def test_nvml_source_renders_autodetect(host):
    content = host.file("/tmp/gpufleet-mol-gres-nvml.conf").content_string
    assert [line for line in content.splitlines() if line and not line.startswith("#")] == ["NodeName=node01 AutoDetect=nvml"]
