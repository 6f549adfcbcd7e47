"""gres.conf for a 1-GPU SKU; the handler restarted slurmd through systemd after writing it."""
testinfra_hosts = ["gpufleet-sysd-join-node"]
GRES_LINE = "NodeName=node01 Name=gpu Type=h100 File=/dev/nvidia0"


def test_gres_conf_names_the_gpu(host):
    content = host.file("/etc/slurm/gres.conf").content_string
    assert [line for line in content.splitlines() if line and not line.startswith("#")] == [GRES_LINE]


def test_slurmd_was_restarted_by_systemd_after_gres_conf_changed(host):
    # The unit's main process started no earlier than gres.conf was written (1 s resolution).
    written = int(host.check_output("stat -c %Y /etc/slurm/gres.conf"))
    started = int(host.check_output('date -d "$(systemctl show -p ActiveEnterTimestamp --value slurmd)" +%s'))
    assert started >= written, (started, written)
    assert host.service("slurmd").is_running


def test_gpu_job_gets_the_gpu(host):
    out = host.check_output("timeout 60 srun -N1 -w node01 --gres=gpu:h100:1 printenv CUDA_VISIBLE_DEVICES")
    assert out == "0"
