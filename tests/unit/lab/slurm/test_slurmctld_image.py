"""The lab's Slurm controller image is built again when its sources change (an image with an
older entry point is never reused)."""
import shutil

from lab.slurm import slurmctld


def _copy_sources(tmp_path, monkeypatch):
    for name in ("Dockerfile.slurmctld", "slurmctld-entrypoint.sh", "Dockerfile.node"):
        shutil.copy(slurmctld.HERE + "/" + name, tmp_path / name)
    monkeypatch.setattr(slurmctld, "HERE", str(tmp_path))


def test_the_digest_follows_the_entry_point_the_dockerfile_copies(tmp_path, monkeypatch):
    _copy_sources(tmp_path, monkeypatch)
    before = slurmctld.source_digest("Dockerfile.slurmctld")
    assert slurmctld.source_digest("Dockerfile.slurmctld") == before
    with open(tmp_path / "slurmctld-entrypoint.sh", "a") as handle:
        handle.write("# changed\n")
    assert slurmctld.source_digest("Dockerfile.slurmctld") != before


def test_the_digest_follows_the_dockerfile_itself(tmp_path, monkeypatch):
    _copy_sources(tmp_path, monkeypatch)
    before = slurmctld.source_digest("Dockerfile.node")
    with open(tmp_path / "Dockerfile.node", "a") as handle:
        handle.write("RUN true\n")
    assert slurmctld.source_digest("Dockerfile.node") != before


def test_an_image_from_other_sources_is_built_again_and_one_from_these_is_kept(monkeypatch):
    built = []
    labels = {"current": slurmctld.source_digest("Dockerfile.slurmctld"), "stale": "0" * 64}
    monkeypatch.setattr(slurmctld, "_image_source", labels.get)
    monkeypatch.setattr(slurmctld, "image_exists", lambda image: True)
    monkeypatch.setattr(slurmctld, "_docker", lambda *args, **kwargs: built.append(args))
    assert slurmctld.build_image("current") is False and built == []
    assert slurmctld.build_image("stale") is True
    (args,) = built
    assert "%s=%s" % (slurmctld.SOURCE_LABEL, labels["current"]) in args
    assert slurmctld.build_image("current", force=True) is True
