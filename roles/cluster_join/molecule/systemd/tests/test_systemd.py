"""munge and slurmd run as enabled systemd units; the node registered, was resumed and runs jobs."""
testinfra_hosts = ["gpufleet-sysd-join-node"]


def test_systemd_is_pid_1(host):
    assert host.file("/proc/1/comm").content_string.strip() == "systemd"
    assert host.run("systemctl is-system-running").stdout.strip() in ("running", "degraded")


def test_units_are_enabled_and_active(host):
    for unit in ("munge", "slurmd"):
        service = host.service(unit)
        assert service.is_enabled and service.is_running, unit


def test_slurmd_runs_under_its_unit_configless(host):
    main_pid = host.check_output("systemctl show -p MainPID --value slurmd")
    cmdline = host.file("/proc/%s/cmdline" % main_pid).content_string.replace("\0", " ")
    assert "/usr/sbin/slurmd -D -s --conf-server ctl:6817 -N node01" in cmdline
    assert not host.file("/etc/slurm/slurm.conf").exists


def test_configless_dropin_clears_the_condition(host):
    assert host.check_output("systemctl show -p ConditionResult --value slurmd") == "yes"
    assert "ConditionPathExists=\n" in host.file(
        "/etc/systemd/system/slurmd.service.d/gpufleet-configless.conf").content_string


def test_munge_key_is_private(host):
    key = host.file("/etc/munge/munge.key")
    assert key.user == "munge" and key.mode == 0o400


def test_node_is_resumed(host):
    out = host.check_output("scontrol show node -o node01")
    state = out.split("State=")[1].split()[0].split("+")
    assert "IDLE" in state and "DRAIN" not in state, out


def test_srun_hostname_runs_on_the_node(host):
    assert host.check_output("timeout 60 srun -N1 -w node01 hostname") == "node01"


def test_job_steps_are_children_of_the_slurmd_unit(host):
    # A job step forks from slurmd (slurmstepd), so it lives in slurmd.service's cgroup.
    out = host.check_output("timeout 60 srun -N1 -w node01 cat /proc/self/cgroup")
    assert "slurmd.service" in out, out
