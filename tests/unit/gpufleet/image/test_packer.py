import pytest

from ansible_collections.gpufleet.baremetal.plugins.module_utils.image.errors import PackerError
from gpufleet.image.packer import Packer


class FakeRunner(object):
    def __init__(self, version="Packer v1.6.6", results=None):
        self.calls = []
        self.version = version
        self.results = results or {}

    def __call__(self, argv, cwd, on_line):
        self.calls.append(argv[1:])
        if argv[1] == "version":
            return 0, [self.version]
        rc, lines = self.results.get(argv[1], (0, []))
        for line in lines:
            on_line(line)
        return rc, lines


def make(runner):
    return Packer("/t", runner=runner, which=lambda name: "/usr/bin/packer")


def test_missing_packer_is_a_clear_error():
    with pytest.raises(PackerError, match="was not found on PATH. Install Packer"):
        Packer("/t", which=lambda name: None)


@pytest.mark.parametrize("version, installs", [("Packer v1.6.6", False), ("Packer v1.7.10", False),
                                               ("Packer v1.11.2", True)])
def test_plugins_install_only_where_packer_needs_it(version, installs):
    runner = FakeRunner(version)
    assert make(runner).ensure_plugin("docker") is installs
    assert (["plugins", "install", "github.com/hashicorp/docker"] in runner.calls) is installs


def test_validate_passes_only_var_file_and_vars():
    runner = FakeRunner()
    make(runner).validate("qemu", "/v.json", {"b": "2", "a": "1"})
    assert runner.calls[-1] == ["validate", "-only=qemu.node", "-var-file=/v.json", "-var=a=1", "-var=b=2", "."]


def test_unknown_builder_and_invalid_template_fail():
    with pytest.raises(PackerError, match='Builder "vmware" is unknown'):
        make(FakeRunner()).validate("vmware", "/v.json")
    runner = FakeRunner(results={"validate": (1, ["Error: Unsupported argument"])})
    with pytest.raises(PackerError, match="invalid for builder docker.*Unsupported argument"):
        make(runner).validate("docker", "/v.json")


def test_failed_build_reports_error_and_last_provisioner_lines():
    lines = ["1,docker.node,ui,message,    docker.node: E: Version '9.9' for 'fio' was not found",
             "2,,ui,error,Build 'docker.node' errored: Script exited with non-zero exit status: 100"]
    streamed = []
    with pytest.raises(PackerError) as err:
        make(FakeRunner(results={"build": (1, lines)})).build("docker", "/v.json", on_line=streamed.append)
    assert "exit code 1" in err.value.msg and "non-zero exit status: 100" in err.value.msg
    assert "Version '9.9' for 'fio' was not found" in err.value.msg
    assert streamed == lines and err.value.details["returncode"] == 1


def test_fmt_check_failure_names_the_fix():
    with pytest.raises(PackerError, match="packer fmt /t"):
        make(FakeRunner(results={"fmt": (3, ["sources.pkr.hcl"])})).fmt_check()


def test_a_pinned_version_gone_from_the_archive_is_named_with_the_fix():
    # apt-get's own words, as Packer's docker builder printed them (once as a message, once as an
    # error); Debian's archive keeps only the newest version of each suite
    lines = ["1,docker.node,ui,message,    docker.node: E: Version '6.1.192-2' for 'linux-image-cloud-amd64' "
             "was not found",
             "2,,ui,error,==> docker.node: E: Version '6.1.192-2' for 'linux-image-cloud-amd64' was not found",
             "3,,ui,error,Build 'docker.node' errored: Script exited with non-zero exit status: 100"]
    with pytest.raises(PackerError) as err:
        make(FakeRunner(results={"build": (1, lines)})).build("docker", "/v.json")
    assert "no longer has these pinned versions: linux-image-cloud-amd64=6.1.192-2;" in err.value.msg
    assert "apt-cache madison PACKAGE" in err.value.msg


def test_a_failed_build_without_a_missing_pin_gives_no_pin_hint():
    lines = ["1,,ui,error,Build 'docker.node' errored: Script exited with non-zero exit status: 1"]
    with pytest.raises(PackerError) as err:
        make(FakeRunner(results={"build": (1, lines)})).build("docker", "/v.json")
    assert "pinned versions" not in err.value.msg
