"""playbooks/files/replacement_reservation.sh: day-2's replacement for a job that lost a member,
run with the arguments playbooks/admit.yml (the resume) and playbooks/bind_replacement.yml (the
bind) pass, against a stand-in Slurm (scontrol, sinfo, squeue on PATH, logging every call and
answering from a state folder). What the real slurmctld 22.05 does with the same commands
(a reservation without a job purged by PURGE_COMP, one with a bound pending job kept) was
tried on the lab's controller image; the lab scenario runs it end to end."""
import os
import re
import subprocess

import pytest

from tests import slurm_stubs
from tests.helpers import ROOT
from tests.unit.playbooks.test_admit_script import _args as admit_script_args

SCRIPT = os.path.join(ROOT, "playbooks", "files", "replacement_reservation.sh")
RESV = "7@1800000000"

STUB = slurm_stubs.CASE_STUB + r"""  "sinfo "*) cat "$state/drained" 2>/dev/null; exit 0 ;;
  "squeue "*)
    if [[ "$*" == *"%u"* ]]; then echo alice; exit 0; fi
    if [[ "$*" == *"%v"* ]]; then cat "$state/bound" 2>/dev/null || echo "(null)"; exit 0; fi
    cat "$state/job" 2>/dev/null; exit 0 ;;
  "scontrol show")
    # reservations: one "NAME NODES" line each (NODES as Slurm prints them: n[1-2] or a list)
    if [[ $2 == hostnames ]]; then echo "$3" | sed 's/n\[1-2\]/n1,n2/' | tr ',' '\n'; exit 0; fi   # enough for n[1-2]
    line=$(grep "^$3 " "$state/reservations" 2>/dev/null) || exit 1
    [[ ${4:-} == -o ]] && echo "ReservationName=$3 StartTime=now Nodes=${line#* } NodeCnt=2 Flags=IGNORE_JOBS"
    exit 0 ;;
  "scontrol create")
    [[ -e $state/refuse_drained && -s $state/drained ]] && { echo "Requested nodes are busy" >&2; exit 1; }
    echo "$(echo "$*" | sed -n 's/.*ReservationName=\([^ ]*\).*/\1/p') $(echo "$*" | sed -n 's/.* Nodes=\([^ ]*\).*/\1/p')" \
      >> "$state/reservations" ;;
  "scontrol delete")
    grep -v "^${2#ReservationName=} " "$state/reservations" > "$state/r.tmp"; mv "$state/r.tmp" "$state/reservations" ;;
  "scontrol update")
    if [[ "$*" == *"State=RESUME"* ]]; then rm -f "$state/drained"; fi
    if [[ $2 == ReservationName=* && "$*" == *" Nodes="* ]]; then
      name=${2#ReservationName=}; to=$(echo "$*" | sed -n 's/.* Nodes=\([^ ]*\).*/\1/p')
      sed -i "s/^$name .*/$name $to/" "$state/reservations"
    fi
    if [[ "$*" == *"JobId="* ]]; then
      [[ -e $state/refuse_bind ]] && { echo "Job is no longer pending execution" >&2; exit 1; }
      echo "$*" | sed -n 's/.*ReservationName=\([^ ]*\).*/\1/p' > "$state/bound"
    fi
    exit 0 ;;
  *) exit 0 ;;
esac
"""


def resume_args(**variables):
    """What playbooks/admit.yml passes for a day-2 replacement."""
    return admit_script_args("playbooks/admit.yml", "Resume the replacement", script=SCRIPT,
                             **dict(dict(gpufleet_admit_job="7", gpufleet_replace_reservation=RESV,
                                         gpufleet_replace_nodes=["n2", "n5"], gpufleet_nodes_csv="n2"), **variables))


def bind_args():
    """What playbooks/bind_replacement.yml passes."""
    return admit_script_args("playbooks/bind_replacement.yml", "Bind the job", script=SCRIPT, gpufleet_bind_job="7",
                             gpufleet_bind_reservation=RESV, gpufleet_bind_nodes="n2,n5")


@pytest.fixture
def slurm(tmp_path):
    bin_dir, state = slurm_stubs.install(tmp_path, ("scontrol", "sinfo", "squeue"),
                                         lambda name: STUB.replace("{name}", name))

    def run(args, **files):
        for name, text in files.items():
            (state / name).write_text(text)
        env = dict(os.environ, PATH="%s:%s" % (bin_dir, os.environ["PATH"]), SLURM_STATE=str(state))
        proc = subprocess.run(["bash", SCRIPT] + args, env=env, capture_output=True, text=True, timeout=30)
        calls = (state / "calls").read_text().splitlines() if (state / "calls").exists() else []
        (state / "calls").unlink(missing_ok=True)
        return proc, [c for c in calls if re.match(r"scontrol (update|create|delete)", c)]
    return state, run


def test_the_playbooks_pass_the_job_the_reservation_its_nodes_and_the_spare():
    assert resume_args() == ["7", RESV, "n2,n5", "n2", ""]
    assert resume_args(gpufleet_replace_failed=["n1", "n6"])[-1] == "n1,n6"
    assert bind_args() == ["7", RESV, "n2,n5", ""]


def test_while_the_job_runs_its_nodes_are_reserved_for_its_owner_and_the_spare_resumed_inside(slurm):
    state, run = slurm
    proc, changes = run(resume_args(), job="RUNNING\n", drained="n2\n")
    assert proc.returncode == 0, proc.stderr
    assert changes == [
        "scontrol create reservation ReservationName=%s Nodes=n2,n5 StartTime=now Duration=UNLIMITED Users=alice "
        "Flags=IGNORE_JOBS" % RESV,                     # no PURGE_COMP: with no job in it, Slurm would purge it
        "scontrol update NodeName=n2 State=RESUME"]
    # a repeat changes nothing: created once, the spare no longer drained, a running job never bound
    proc, changes = run(resume_args())
    assert proc.returncode == 0 and changes == [], (proc.stderr, changes)


def test_once_pending_again_the_job_is_bound_then_the_reservation_goes_a_minute_after_it(slurm):
    state, run = slurm
    run(resume_args(), job="RUNNING\n", drained="n2\n")
    proc, changes = run(bind_args(), job="PENDING\n")
    assert proc.returncode == 0, proc.stderr
    assert changes == ["scontrol update JobId=7 ReservationName=%s" % RESV,
                       "scontrol update ReservationName=%s Flags=PURGE_COMP=00:01:00" % RESV]
    proc, changes = run(bind_args())
    assert proc.returncode == 0 and changes == []            # bound already: left as it is


def test_a_job_that_is_gone_leaves_no_reservation_and_its_spare_is_still_resumed(slurm):
    state, run = slurm
    run(resume_args(), job="RUNNING\n", drained="n2\n")
    (state / "job").write_text("")
    proc, changes = run(bind_args())
    assert proc.returncode == 0 and changes == ["scontrol delete ReservationName=%s" % RESV], changes
    proc, changes = run(resume_args(), drained="n2\n")
    assert changes == ["scontrol update NodeName=n2 State=RESUME"]


def test_a_job_in_its_own_gang_reservation_gets_the_spare_added_to_it(slurm):
    """Lab: the job the controller had admitted as a gang ran in its reservation 7@...; a second
    one on its nodes was refused ("overlaps with another reservation")."""
    state, run = slurm
    proc, changes = run(resume_args(), job="RUNNING\n", drained="n2\n", reservations="%s n[1-2]\n" % RESV,
                        bound=RESV + "\n")
    assert proc.returncode == 0, proc.stderr
    # resume_args names the survivor n5 and the spare n2: n2 is in already, n5 is added
    assert changes == ["scontrol update ReservationName=%s Nodes=n1,n2,n5" % RESV,
                       "scontrol update NodeName=n2 State=RESUME"]
    proc, changes = run(bind_args(), job="PENDING\n")
    assert proc.returncode == 0 and changes == [], changes          # requeued, still bound: nothing to do


def test_a_slurm_refusing_a_reservation_on_a_drained_node_gets_the_spare_resumed_first(slurm):
    state, run = slurm
    proc, changes = run(resume_args(), job="RUNNING\n", drained="n2\n", refuse_drained="")
    assert proc.returncode == 0, proc.stderr
    assert changes == ["scontrol create reservation ReservationName=%s Nodes=n2,n5 StartTime=now Duration=UNLIMITED "
                       "Users=alice Flags=IGNORE_JOBS" % RESV,
                       "scontrol update NodeName=n2 State=RESUME",
                       "scontrol create reservation ReservationName=%s Nodes=n2,n5 StartTime=now Duration=UNLIMITED "
                       "Users=alice Flags=IGNORE_JOBS" % RESV]


def test_a_failed_bind_drains_the_spare_this_run_resumed_and_fails(slurm):
    state, run = slurm
    proc, changes = run(resume_args(), job="PENDING\n", drained="n2\n", refuse_bind="")
    assert proc.returncode != 0
    assert changes[-1] == ("scontrol update NodeName=n2 State=DRAIN "
                           "Reason=gpufleet:replacement for job 7 failed; held again")


def test_the_failed_member_is_taken_out_of_the_jobs_gang_reservation_as_the_spare_joins(slurm):
    """Lab, 2026-11-25 05:30 UTC: the requeued job waited Slurm's requeue delay (120 s); by then
    its failed member was repaired and back, still in the gang's reservation, and Slurm started
    the job there and on the survivor, the spare idle. Now n1 leaves the reservation as n5
    joins: requeued, the job can start only on its survivor n2 and the spare n5."""
    state, run = slurm
    args = resume_args(gpufleet_replace_nodes=["n2", "n5"], gpufleet_nodes_csv="n5", gpufleet_replace_failed=["n1"])
    proc, changes = run(args, job="RUNNING\n", drained="n5\n", reservations="%s n[1-2]\n" % RESV, bound=RESV + "\n")
    assert proc.returncode == 0, proc.stderr
    assert changes == ["scontrol update ReservationName=%s Nodes=n2,n5" % RESV,
                       "scontrol update NodeName=n5 State=RESUME"]
    assert "took the failed n1 out of %s" % RESV in proc.stdout
    assert (state / "reservations").read_text() == "%s n2,n5\n" % RESV
    # a repeat (the same decision resumed after a restart) changes nothing
    proc, changes = run(args)
    assert proc.returncode == 0 and changes == [], (proc.stderr, changes)
