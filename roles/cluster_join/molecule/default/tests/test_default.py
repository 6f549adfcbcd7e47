"""The node joined the real slurmctld, was resumed after the gate passed, and runs jobs."""
testinfra_hosts = ["gpufleet-mol-join-node"]


def test_munge_key_is_private(host):
    key = host.file("/etc/munge/munge.key")
    assert key.user == "munge" and key.mode == 0o400


def test_slurmd_points_at_the_controller(host):
    assert 'SLURMD_OPTIONS="--conf-server ctl:6817 -N node01"' in host.file("/etc/default/slurmd").content_string


def test_daemons_run(host):
    assert host.process.filter(comm="munged")
    assert host.process.filter(comm="slurmd")


def test_node_is_resumed(host):
    out = host.check_output("scontrol show node -o node01")
    state = out.split("State=")[1].split()[0].split("+")
    assert "IDLE" in state and "DRAIN" not in state, out


def test_srun_hostname_runs_on_the_node(host):
    assert host.check_output("timeout 60 srun -N1 -w node01 hostname") == "node01"
