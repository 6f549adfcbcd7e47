"""The lab's boot-time simulation (lab/twin/boottime.py): built at `lab up`, mounted and
preloaded into every node container, a pass-through until enabled."""
import os
import shutil
import subprocess

import pytest

from lab.twin import boottime, nodes
from lab.twin import config as lab_config
from lab.twin.errors import LabError

needs_cc = pytest.mark.skipif(not (shutil.which("cc") or shutil.which("gcc")), reason="no C compiler")


@needs_cc
def test_build_enable_disable(tmp_path):
    cfg = lab_config.load(None, state_dir=str(tmp_path))
    with pytest.raises(LabError, match="not built"):
        boottime.enable(cfg)
    directory = boottime.build(cfg)
    library = os.path.join(directory, boottime.LIBRARY)
    symbols = subprocess.run(["nm", "-D", "--defined-only", library], capture_output=True, text=True).stdout
    assert " T sysinfo" in symbols, symbols
    boottime.enable(cfg)
    assert os.path.exists(os.path.join(directory, "enabled"))
    boottime.disable(cfg)
    boottime.disable(cfg)   # idempotent
    assert not os.path.exists(os.path.join(directory, "enabled"))


def test_no_compiler_is_an_error_naming_the_fix(tmp_path, monkeypatch):
    cfg = lab_config.load(None, state_dir=str(tmp_path))
    monkeypatch.setattr(shutil, "which", lambda _name: None)
    with pytest.raises(LabError, match="apt-get install gcc"):
        boottime.build(cfg)


def test_every_node_container_mounts_and_preloads_it(tmp_path):
    cfg = lab_config.load(None, state_dir=str(tmp_path))
    manager = nodes.NodeManager.__new__(nodes.NodeManager)
    manager.cfg, manager.docker = cfg, type("D", (), {"LABEL": "gpufleet-lab"})()
    argv = manager.run_args(cfg.nodes[0].name, "disk:tag")
    assert "%s:%s:ro" % (boottime.directory(cfg), boottime.MOUNT) in argv
    assert "LD_PRELOAD=%s/%s" % (boottime.MOUNT, boottime.LIBRARY) in argv
    assert argv[-3:] == ["disk:tag", "sleep", "infinity"]


def test_the_gates_fio_directory_is_a_tmpfs_in_every_node_container(tmp_path):
    # fio on the CI host's shared disk measured the test running beside it, not the node
    from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate import gate_run
    cfg = lab_config.load(None, state_dir=str(tmp_path))
    manager = nodes.NodeManager.__new__(nodes.NodeManager)
    manager.cfg, manager.docker = cfg, type("D", (), {"LABEL": "gpufleet-lab"})()
    argv = manager.run_args(cfg.nodes[0].name, "disk:tag")
    mount = argv[argv.index("--tmpfs") + 1]
    assert mount.split(":")[0] == gate_run.argument_spec()["storage_dir"]["default"]
