from gpufleet.capacity.model import Job
from gpufleet.report import collect_fleet, render_fleet_html
from tests.unit.gpufleet.view.history import H, T0, inputs

JOBS = (Job("101", 1, 8, "gpu", submit_time=T0 + 1.75 * H, state="RUNNING", pool="h100", nodes_assigned=("n1",)),
        Job("102", 5, 8, "gpu", submit_time=T0 + 3 * H, reason="Resources", pool="h100"),
        Job("107", 1, 8, "gpu", submit_time=T0 + 3 * H, reason="Dependency", pool="h100"))


def _data():
    return collect_fleet(inputs(jobs=JOBS, job_extra={"101": {"start_time": T0 + 2.5 * H}}), T0, T0 + 4 * H, buckets=8)


def test_fleet_data_has_the_seam_series_job_starts_and_why_of_each_pending_job():
    data = _data()
    assert len(data["seam"]["series"]) == 8
    assert data["seam"]["total"]["owned_gpu_hours"] == 120.0
    [start] = data["job_starts"]
    # Submitted while n1 was validating (+1.75 h is its ready time): ready 0.25 h, then Slurm 0.5 h.
    assert start["steps"] == {"ready": 0.25 * H, "scheduling": 0.5 * H} and start["state_at_submit"] == "ready"
    assert [(a["subject"], a["layer"]) for a in data["pending"]] == [("102", "L1"), ("107", "L3")]
    assert [r["node"] for r in data["time_to_schedulable"]] == ["n1"]


def test_the_page_is_self_contained_with_one_segment_per_bucket_and_category():
    data = _data()
    page = render_fleet_html(data)
    segments = sum(1 for b in data["seam"]["series"] for v in b["by_category"].values() if v > 0)
    assert page.count('class="seam-seg"') == segments > 8
    assert "<script" not in page and "http://" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert "Why each pending job waits" in page and "capacity exists; Slurm holds the job" in page
