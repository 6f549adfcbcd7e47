"""Stand-in Slurm commands for tests of the shell that playbooks run on the slurmctld host:
small scripts put on PATH that log their calls and answer from a state folder."""
import stat


def install(tmp_path, names, text_for):
    """Write ``bin/<name>`` for each name (``text_for(name)`` is the script); (bin, state) dirs."""
    bindir, state = tmp_path / "bin", tmp_path / "slurm"
    bindir.mkdir()
    state.mkdir()
    for name in names:
        path = bindir / name
        path.write_text(text_for(name))
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return bindir, state
