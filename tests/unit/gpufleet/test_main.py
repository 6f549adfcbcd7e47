"""The ``gpufleet`` entry point: help and --version without the collection, exit codes in help."""
import ast
import os
import pathlib
import re
import subprocess
import sys
from importlib.metadata import version

import pytest

from gpufleet import commands
from gpufleet import main as cli_main


def test_no_command_prints_help_and_returns_2(capsys):
    assert cli_main.main([]) == 2
    assert "usage: gpufleet" in capsys.readouterr().out


COMMANDS_DIR = pathlib.Path(commands.__file__).parent


def _off_the_collection(tmp_path, *argv):
    """``python -m gpufleet.main ARGV`` from another folder with an empty collections path."""
    empty = tmp_path / "no-collections"
    empty.mkdir()
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(empty), HOME=str(tmp_path))
    env.pop("ANSIBLE_CONFIG", None)
    return subprocess.run([sys.executable, "-m", "gpufleet.main"] + list(argv), cwd=str(tmp_path), env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=120)


def _command_names():
    return sorted(p.stem for p in COMMANDS_DIR.glob("*.py") if p.stem != "__init__")


def test_help_works_without_the_collection_and_lists_every_command(tmp_path):
    proc = _off_the_collection(tmp_path, "--help")
    assert proc.returncode == 0, proc.stderr
    for name in _command_names():
        assert re.search(r"^\s+%s\s" % name, proc.stdout, re.M), (name, proc.stdout)
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("argv", [["why", "--help"], ["controller", "status", "--help"], ["run", "--help"],
                                  ["metrics", "--help"], ["seam", "--help"], ["refresh", "start", "--help"]])
def test_command_help_works_without_the_collection(tmp_path, argv):
    proc = _off_the_collection(tmp_path, *argv)
    assert proc.returncode == 0 and proc.stdout.startswith("usage: gpufleet " + argv[0]), proc.stderr


def test_a_command_run_without_the_collection_is_one_line_naming_the_fix(tmp_path):
    proc = _off_the_collection(tmp_path, "why", "42", "--policy", "p.yml", "--ledger", "l.sqlite")
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 1 and len(lines) == 1, proc.stderr
    assert lines[0].startswith("gpufleet why: error:") and "ANSIBLE_COLLECTIONS_PATH" in lines[0]
    assert "make collection" in lines[0]


def test_version_prints_the_package_and_collection_versions(capsys):
    with pytest.raises(SystemExit) as done:
        cli_main.main(["--version"])
    out = capsys.readouterr().out
    assert done.value.code == 0
    assert out.startswith("gpufleet %s;" % version("gpufleet"))
    galaxy = pathlib.Path(cli_main.collection.root(), "galaxy.yml").read_text()
    assert "collection gpufleet.baremetal %s" % re.search(r"^version: (\S+)", galaxy, re.M).group(1) in out


def test_version_without_the_collection_says_so_and_exits_0(tmp_path):
    proc = _off_the_collection(tmp_path, "--version")
    assert proc.returncode == 0 and proc.stdout.startswith("gpufleet %s;" % version("gpufleet"))
    assert "collection gpufleet.baremetal not found" in proc.stdout


def _modules():
    return list(cli_main._command_modules())


def test_every_documented_exit_code_is_in_its_help(capsys):
    parser = cli_main.build_parser()
    documented = [m for m in _modules() if getattr(m, "EXIT_CODES", None)]
    assert {"why", "run"} <= {m.NAME for m in documented}
    for module in documented:
        with pytest.raises(SystemExit):
            parser.parse_args([module.NAME, "--help"])
        text = capsys.readouterr().out
        for code, meaning in module.EXIT_CODES:
            assert re.search(r"^  %d\s+%s$" % (code, re.escape(meaning)), text, re.M), (module.NAME, code, text)


def _literal_returns(path):
    """Integer literals a command module returns or exits with (``return 11``, ``sys.exit(3)``)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        value = node.value if isinstance(node, ast.Return) else (
            node.args[0] if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "exit" and node.args
            else None)
        for item in ast.walk(value) if value is not None else ():
            if isinstance(item, ast.Constant) and type(item.value) is int:
                found.add(item.value)
    return found


def test_commands_exit_only_with_codes_their_help_lists():
    """A new ``return 3`` in a command must come with its line in EXIT_CODES (and so in --help)."""
    modules = {m.NAME: m for m in _modules()}
    for name in _command_names():
        module = modules[name]
        listed = {code for code, _meaning in getattr(module, "EXIT_CODES", ())} | {0, 1, 2}
        assert _literal_returns(COMMANDS_DIR / (name + ".py")) <= listed, name
