"""The image features job_submit.lua's file lists: read from Slurm's nodes, written when they
change, off the pass (gpufleet.controller.image_features)."""
import threading

from gpufleet.controller.image_features import FeaturesWriter, image_features
from gpufleet.controller.slurm_json import SlurmNode


def _nodes(**features):
    return {name: SlurmNode(name, "IDLE", (), features=tuple(f)) for name, f in features.items()}


def test_only_image_features_slurm_reports_are_listed_once_each_sorted():
    nodes = _nodes(n1=("image_v2", "nvme", "sku_lab"), n2=("image_v1",), n3=("image_v2",), n4=())
    assert image_features(nodes) == ("image_v1", "image_v2")


class Runs:
    def __init__(self, rcs=()):
        self.calls, self.rcs = [], list(rcs)
        self.release = threading.Event()
        self.release.set()

    def __call__(self, features, run_id):
        self.release.wait(5)
        self.calls.append((features, run_id))
        return self.rcs.pop(0) if self.rcs else 0


def _call(writer, nodes, now):
    thread = writer(nodes, now)
    if thread is not None:
        thread.join(5)
    return thread


def test_written_when_the_list_changes_and_not_again_while_it_holds():
    runs, said = Runs(), []
    writer = FeaturesWriter(runs, say=said.append)
    _call(writer, _nodes(n1=("image_v1",)), 0)
    _call(writer, _nodes(n1=("image_v1",), n2=("image_v1",)), 10)           # same list: nothing
    _call(writer, _nodes(n1=("image_v1",), n2=("image_v2",)), 20)           # a rollout moved n2
    assert runs.calls == [(["image_v1"], "image-features"), (["image_v1", "image_v2"], "image-features")]
    assert writer.written == ("image_v1", "image_v2")
    assert said[-1] == "image features for job_submit.lua: image_v1 image_v2"


def test_nothing_is_written_when_slurm_reports_no_image_feature():
    runs = Runs()
    writer = FeaturesWriter(runs)
    assert _call(writer, {}, 0) is None and _call(writer, _nodes(n1=("nvme",)), 1) is None
    assert runs.calls == []


def test_a_failed_write_is_said_and_tried_again_after_the_retry_time():
    runs, said = Runs(rcs=[2, 0]), []
    writer = FeaturesWriter(runs, say=said.append, retry=60)
    nodes = _nodes(n1=("image_v1",), n2=("image_v2",))
    _call(writer, nodes, 0)
    assert writer.written is None and "not written (playbooks/image_features.yml: 2); trying again in 60s" in said[-1]
    assert _call(writer, nodes, 30) is None                    # not before the retry time
    _call(writer, nodes, 61)
    assert len(runs.calls) == 2 and writer.written == ("image_v1", "image_v2")


def test_a_run_that_raises_is_a_failed_write_not_a_dead_loop():
    def boom(features, run_id):
        raise OSError("ansible-runner could not start")
    said = []
    writer = FeaturesWriter(boom, say=said.append)
    _call(writer, _nodes(n1=("image_v1",)), 0)
    assert writer.written is None and "error: ansible-runner could not start" in said[-1]


def test_one_write_at_a_time():
    runs = Runs()
    runs.release.clear()
    writer = FeaturesWriter(runs)
    first = writer(_nodes(n1=("image_v1",)), 0)
    assert writer(_nodes(n1=("image_v2",)), 1) is None         # the first still runs
    runs.release.set()
    first.join(5)
    _call(writer, _nodes(n1=("image_v2",)), 2)
    assert [c[0] for c in runs.calls] == [["image_v1"], ["image_v2"]]


def test_each_pass_hands_slurm_s_nodes_to_the_writer_and_a_dry_run_does_not(make_reconciler):
    from tests.unit.gpufleet.controller.conftest import FakeSource
    seen = []
    nodes = _nodes(n1=("image_v1",))
    rec, _runs, _planning = make_reconciler(source=FakeSource(nodes=nodes))
    rec.image_features = lambda slurm_nodes, now: seen.append((slurm_nodes, now))
    rec.once(dry_run=True)
    assert seen == []
    rec.once()
    assert seen == [(nodes, 1000.0)]
