"""Retention of run folders: a pure plan driven by a fake clock, then the real folder."""
import os

from gpufleet.controller.retention import Entry, Retention, plan_prune, prune, scan

DAY = 86400.0
NOW = 1_800_000_000.0


def entries(*ages_days, finished=True):
    return [Entry("ctl-%d-wake" % i, NOW - age * DAY, finished) for i, age in enumerate(ages_days, 1)]


def test_keep_newest_n_only():
    got = plan_prune(entries(1, 2, 3, 4, 5), NOW, Retention(keep_runs=2))
    assert got == ["ctl-5-wake", "ctl-4-wake", "ctl-3-wake"]      # oldest first


def test_keep_younger_than_only():
    assert plan_prune(entries(1, 2, 8, 30), NOW, Retention(keep_for=7 * DAY)) == ["ctl-4-wake", "ctl-3-wake"]


def test_either_rule_keeps_a_run():
    # 3 newest kept by count; the 4th is 5 days old: kept by age; the 5th (10 days) goes
    got = plan_prune(entries(1, 2, 3, 5, 10), NOW, Retention(keep_runs=3, keep_for=7 * DAY))
    assert got == ["ctl-5-wake"]


def test_no_rule_keeps_everything_and_zero_keeps_nothing_finished():
    assert plan_prune(entries(1, 100), NOW, Retention()) == []
    assert plan_prune(entries(1, 100), NOW, Retention(keep_runs=0)) == ["ctl-2-wake", "ctl-1-wake"]


def test_runs_in_flight_and_unfinished_runs_are_never_pruned():
    runs = entries(50, 60) + [Entry("ctl-9-bringup", NOW - 90 * DAY, True),
                              Entry("ctl-9-bringup-1", NOW - 90 * DAY, True),
                              Entry("ctl-3-park", NOW - 90 * DAY, False)]
    got = plan_prune(runs, NOW, Retention(keep_runs=0), in_flight={"ctl-9-bringup"})
    assert got == ["ctl-2-wake", "ctl-1-wake"]


def test_folders_not_of_controller_runs_are_left_alone():
    runs = [Entry("bmc-read", NOW - 90 * DAY, True), Entry("run-20260101T000000Z", NOW - 90 * DAY, True),
            Entry("bmc", NOW - 90 * DAY, True)]
    assert plan_prune(runs, NOW, Retention(keep_runs=0)) == []


def test_the_clock_moves_a_run_out_of_the_age_window():
    runs = [Entry("ctl-1-wake", NOW, True)]
    keep = Retention(keep_for=DAY)
    assert plan_prune(runs, NOW + DAY - 1, keep) == []
    assert plan_prune(runs, NOW + DAY, keep) == ["ctl-1-wake"]


def _run(root, name, status, at):
    art = root / name / "artifacts" / name
    art.mkdir(parents=True)
    if status is not None:
        (art / "status").write_text(status)
        os.utime(art / "status", (at, at))
    os.utime(root / name, (at, at))


def test_scan_reads_ansible_runner_status_and_prune_deletes(tmp_path):
    _run(tmp_path, "ctl-1-wake", "successful", NOW - 10 * DAY)
    _run(tmp_path, "ctl-2-park", "failed", NOW - 9 * DAY)
    _run(tmp_path, "ctl-3-bringup", None, NOW - 20 * DAY)        # killed mid-run: no final status
    _run(tmp_path, "ctl-4-wake", "successful", NOW - 1 * DAY)
    (tmp_path / "bmc").mkdir()
    found = {e.name: e for e in scan(str(tmp_path))}
    assert set(found) == {"ctl-1-wake", "ctl-2-park", "ctl-3-bringup", "ctl-4-wake"}
    assert found["ctl-1-wake"].finished and not found["ctl-3-bringup"].finished
    assert found["ctl-2-park"].at == NOW - 9 * DAY
    deleted, errors = prune(str(tmp_path), NOW, Retention(keep_runs=1, keep_for=DAY / 2))
    assert deleted == ["ctl-1-wake", "ctl-2-park"] and errors == []
    assert sorted(os.listdir(tmp_path)) == ["bmc", "ctl-3-bringup", "ctl-4-wake"]


def test_a_missing_runs_folder_is_nothing_to_do(tmp_path):
    assert prune(str(tmp_path / "absent"), NOW, Retention(keep_runs=0)) == ([], [])
