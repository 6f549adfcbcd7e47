"""The node was drained with the reason, after the running job finished, and stays drained."""
testinfra_hosts = ["gpufleet-mol-drain-node"]


def node_fields(host):
    out = host.check_output("scontrol show node -o node01")
    return out, out.split("State=")[1].split()[0].split("+")


def test_node_is_drained_not_draining(host):
    out, state = node_fields(host)
    assert "DRAIN" in state and "IDLE" in state, out
    assert host.check_output("sinfo -h -n node01 -o %T") == "drained"


def test_reason_is_recorded(host):
    out = node_fields(host)[0]
    assert "Reason=gpufleet: molecule maintenance" in out


def test_job_running_at_drain_time_completed(host):
    # The job prints "done" only after it saw the node draining (prepare.yml).
    assert host.file("/tmp/mol-drain-job.out").content_string.strip() == "done"
    assert host.check_output("squeue -h -w node01") == ""


def test_drained_node_takes_no_new_job(host):
    res = host.run("timeout 20 srun --immediate=5 -N1 -w node01 hostname")
    assert res.rc != 0
