from gpufleet.image import packer_output as po

SAMPLE = """1763771800,,ui,say,==> docker.node: Starting docker container...
1763771801,docker.node,ui,message,    docker.node: gpufleet: all pins verified
1763771830,,ui,error,Build 'docker.node' errored: Script exited with non-zero exit status: 1.Allowed exit codes are: [0]
1763771831,docker.node,artifact-count,1
1763771831,docker.node,artifact,0,builder-id,packer.docker
1763771831,docker.node,artifact,0,files-count,1
1763771831,docker.node,artifact,0,file,0,/out/rootfs.tar
1763771831,docker.node,artifact,0,string,Exported Docker file: /out/rootfs.tar%!(PACKER_COMMA) done\\nok
plain text line"""


def test_parses_ui_artifacts_and_errors():
    lines = [po.parse_line(line) for line in SAMPLE.splitlines()]
    assert lines[-1] is None
    assert lines[0].kind == "ui" and lines[0].text() == "==> docker.node: Starting docker container..."
    assert lines[1].target == "docker.node"
    assert po.error_lines(lines) == ["Build 'docker.node' errored: Script exited with non-zero exit status: 1."
                                     "Allowed exit codes are: [0]"]
    assert lines[-2].data[-1] == "Exported Docker file: /out/rootfs.tar, done\nok"


def test_parses_versions():
    assert po.parse_version("Packer v1.6.6\n") == (1, 6, 6)
    assert po.parse_version("1700000000,,version,1.11.2\n") == (1, 11, 2)
    assert po.parse_version("garbage") is None


def test_missing_pins_are_found_once_each_in_order():
    lines = [po.parse_line(text) for text in (
        "1,docker.node,ui,message,    docker.node: E: Version '9.9' for 'fio' was not found",
        "2,,ui,error,==> docker.node: E: Version '9.9' for 'fio' was not found",
        "3,,ui,error,E: Version '1:1.0' for 'openssh-server' was not found",
        "plain text, not machine-readable")]
    assert po.missing_pins(lines) == [("fio", "9.9"), ("openssh-server", "1:1.0")]
    assert po.missing_pins([po.parse_line("1,,ui,error,Build failed")]) == []
