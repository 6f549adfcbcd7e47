"""contrib/slurm/job_submit.lua run in-process (lupa) with a stand-in for slurmctld's `slurm` table."""
import os

import pytest

lupa = pytest.importorskip("lupa", reason="lupa (requirements.txt) runs the Lua plugin")

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
NO_VAL = 4294967294


@pytest.fixture
def plugin(tmp_path):
    runtime = lupa.LuaRuntime(unpack_returned_tuples=True)
    logs = []
    slurm = runtime.table_from({"SUCCESS": 0, "ERROR": -1})
    slurm.log_info = lambda fmt, *args: logs.append(str(fmt))
    runtime.globals().slurm = slurm
    with open(os.path.join(ROOT, "contrib", "slurm", "job_submit.lua")) as handle:
        runtime.execute(handle.read())
    path = tmp_path / "features"
    runtime.globals().FEATURES_FILE = str(path)

    def submit(features_file, nodes, constraint=None):
        if features_file is None:
            path.unlink(missing_ok=True)
        else:
            path.write_text(features_file)
        job = runtime.table_from({"min_nodes": nodes} if constraint is None
                                 else {"min_nodes": nodes, "features": constraint})
        assert runtime.globals().slurm_job_submit(job, None, 1000) == 0
        return job.features
    submit.logs = logs
    return submit


@pytest.mark.parametrize("features_file,nodes,constraint,expected", [
    ("image_lab\nimage_2026.11.1\n", 4, None, "[image_lab|image_2026.11.1]"),
    ("# rollout 3\nimage_lab\n\nimage_2026.11.1\n", 2, "sku_lab", "sku_lab&[image_lab|image_2026.11.1]"),
    ("image_a\nimage_b\n", 2, "rack_1|rack_2", "(rack_1|rack_2)&[image_a|image_b]"),
    ("image_a\nimage_b\n", 1, None, None),                      # one node: one version anyway
    ("image_a\nimage_b\n", NO_VAL, None, None),                 # no -N given: one node
    ("image_a\n", 4, None, None),                               # no rollout: one version in service
    (None, 4, "sku_lab", "sku_lab"),                            # no file: left alone
])
def test_multi_node_jobs_get_the_matching_or_constraint(plugin, features_file, nodes, constraint, expected):
    assert plugin(features_file, nodes, constraint) == expected


def test_a_job_with_its_own_brackets_is_left_alone_and_logged(plugin):
    assert plugin("image_a\nimage_b\n", 4, "[rack_1|rack_2]") == "[rack_1|rack_2]"
    assert any("left as it is" in line for line in plugin.logs)
