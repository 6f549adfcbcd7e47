"""contrib/slurm/job_submit.lua inside a real slurmctld (Debian's 22.05, the lab's controller
image, JobSubmitPlugins=lua): every multi-node job gets the "matching OR" constraint over the
image versions in service, so all of its nodes share one version; tests/unit/contrib runs the
same plugin in-process. The nodes are never started: the jobs stay pending, which is all the
plugin's work needs (Slurm keeps the constraint the plugin set, and refuses one it cannot read)."""
import os
import re
import subprocess

import pytest

from tests.helpers import ROOT, ensure_base_image, need_docker

pytestmark = pytest.mark.integration
NAME = "gpufleet-lua-ctl"
NET = "gpufleet-lua-net"
PLUGIN = os.path.join(ROOT, "contrib", "slurm", "job_submit.lua")
FEATURES_IN_CONTAINER = "/etc/slurm/gpufleet-image-features"


@pytest.fixture(scope="module")
def ctl(tmp_path_factory):
    need_docker()
    ensure_base_image()
    from lab.slurm import slurmctld as module
    module.build_image()
    tmp = tmp_path_factory.mktemp("lua")
    key = tmp / "munge.key"
    key.write_bytes(os.urandom(64))
    features = tmp / "features"
    features.write_text("# versions in service\nimage_v1\nimage_v2\n")
    subprocess.run(["docker", "network", "create", NET], capture_output=True, check=False)
    # two nodes on each version (and a feature of the site's own on all four)
    module.start_controller(NAME, NET, "lab-r1n[1-2]", str(key), node_conf="CPUs=1 RealMemory=64 Features=image_v1,nvme",
                            conf_extra="NodeName=lab-r1n[3-4] CPUs=1 RealMemory=64 State=CLOUD Features=image_v2,nvme\n"
                                       "JobSubmitPlugins=lua",
                            mounts=[(PLUGIN, "/etc/slurm/job_submit.lua", "ro"),
                                    (str(features), FEATURES_IN_CONTAINER, "ro")])
    yield features
    module.stop_controller(NAME)
    subprocess.run(["docker", "network", "rm", NET], capture_output=True, check=False)


def _submit(*args):
    """sbatch in the controller container -> the job's Features as scontrol shows them."""
    proc = subprocess.run(["docker", "exec", NAME, "sbatch", "--parsable", "--hold"] + list(args) + ["--wrap", "true"],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    job = proc.stdout.strip().split(";")[0]
    shown = subprocess.run(["docker", "exec", NAME, "scontrol", "show", "job", job], capture_output=True, text=True,
                           check=True).stdout
    return re.search(r"\bFeatures=(\S+)", shown).group(1)


def test_a_multi_node_job_gets_the_versions_in_service_as_a_matching_or(ctl):
    assert _submit("-N2") == "[image_v1|image_v2]"


def test_a_one_node_job_is_left_as_it_is(ctl):
    assert _submit("-N1") == "(null)"


def test_the_site_s_own_constraint_is_kept_and_combined(ctl):
    assert _submit("-N2", "--constraint=nvme") == "nvme&[image_v1|image_v2]"


def test_a_job_with_its_own_brackets_is_left_alone(ctl):
    assert _submit("-N2", "--constraint=[image_v1|image_v2]") == "[image_v1|image_v2]"
    log = subprocess.run(["docker", "exec", NAME, "cat", "/var/log/slurm/slurmctld.log"], capture_output=True,
                         text=True, check=True).stdout
    assert "gpufleet: job of uid 0 left as it is: has its own bracketed constraint" in log


def test_with_one_version_in_service_jobs_are_left_as_they_are(ctl):
    original = ctl.read_text()
    try:
        with open(str(ctl), "w") as handle:       # in place: the bind mount keeps the file's inode
            handle.write("image_v2\n")
        assert _submit("-N2") == "(null)"
    finally:
        with open(str(ctl), "w") as handle:
            handle.write(original)
