"""``gpufleet simulate --evaluate`` and ``--failures`` end to end on small files, and their errors."""
import json
import math
import sys

import pytest

from gpufleet.main import main

from .test_simulate import POLICY as FLOORS

POLICY = FLOORS + "    forecast: {enabled: %s, method: %s, bucket_minutes: 60, lead_time: 1h}\n"
DAY = 86400


@pytest.fixture
def files(tmp_path):
    """Ten days of demand every 15 minutes with a daily hump; a policy per forecast method."""
    trace = tmp_path / "demand.csv"
    rows = ["%d,%d" % (t, 8 * round(3 + 3 * max(0.0, math.sin(2 * math.pi * (t % DAY) / DAY))))
            for t in range(0, 10 * DAY, 900)]
    trace.write_text("time,gpus\n" + "\n".join(rows) + "\n")
    paths = {}
    for method in ("seasonal", "learned"):
        path = tmp_path / ("%s.yml" % method)
        path.write_text(POLICY % ("true", method))
        paths[method] = str(path)
    return str(trace), paths


def test_evaluate_scores_each_forecaster_after_the_split(files, capsys):
    pytest.importorskip("sklearn")
    trace, policies = files
    assert main(["simulate", "--trace", trace, "--policy", policies["seasonal"], "--from", str(8 * DAY),
                 "--evaluate", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)["evaluate"]
    assert doc["split"] == 8 * DAY and doc["test_from"] >= 8 * DAY
    assert set(doc["forecasters"]) == {"learned", "seasonal", "last_value"}
    # test points: every hour from day 8 while a whole hour ahead is left in the trace
    assert doc["test_points"] == 2 * 24 - 1
    assert all(score["rmse_gpus"] >= 0 and 0 <= score["smape_pct"] <= 200 for score in doc["forecasters"].values())


def test_failures_report_goodput_replacements_and_the_sweep(files, capsys):
    trace, policies = files
    assert main(["simulate", "--trace", trace, "--policy", policies["seasonal"], "--nodes", "8", "--from",
                 str(9 * DAY), "--failures", "--mtbf-gpu-hours", "20", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)["failures"]
    assert doc["spares"] == 1 and doc["spares_from"] == "floors.hot" and doc["failures"] > 0
    assert doc["repair_s"] == 114.0 and 0 < doc["goodput"] < 1
    assert doc["sweep"][-1]["spares"] == doc["smallest_spares"]
    assert main(["simulate", "--trace", trace, "--policy", policies["seasonal"], "--nodes", "8", "--from",
                 str(9 * DAY), "--failures", "--mtbf-gpu-hours", "20", "--spares", "0"]) == 0
    text = capsys.readouterr().out
    assert "0 hot spare(s)" in text and "goodput:" in text and "replacement: p50" in text


@pytest.mark.parametrize("extra, named", [(["--failures", "--spares", "-1"], "--spares -1"),
                                          (["--failures", "--repair", "-5"], "--repair"),
                                          (["--evaluate", "--failures"], "--evaluate"),
                                          (["--evaluate", "--plot", "x.png"], "--evaluate")])
def test_bad_flags_are_refused_before_the_run(files, capsys, extra, named):
    trace, policies = files
    assert main(["simulate", "--trace", trace, "--policy", policies["seasonal"], "--nodes", "4"] + extra) == 1
    err = capsys.readouterr().err
    assert named in err and "Traceback" not in err


def test_learned_without_scikit_learn_names_the_install(files, capsys, monkeypatch):
    trace, policies = files
    monkeypatch.setitem(sys.modules, "sklearn.ensemble", None)
    assert main(["simulate", "--trace", trace, "--policy", policies["learned"], "--nodes", "4",
                 "--from", str(8 * DAY)]) == 1
    err = capsys.readouterr().err
    assert "pip install 'gpufleet[learn]'" in err and "forecast.method" in err and "Traceback" not in err
