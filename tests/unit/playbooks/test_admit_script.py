"""The gang admission script of playbooks/admit.yml run against a stand-in Slurm (scontrol,
sinfo, squeue as small scripts on PATH that log every call and answer from a state folder).

The lab found it failing for good: a stale gang reservation of an ended job overlapped the
new one, the first attempt left the job held and the members resumed, and every retry then
failed on RESUME of an idle node. These cases pin the repair down."""
import os
import re
import subprocess

import pytest
import yaml

from tests import slurm_stubs
from tests.helpers import ROOT

GANG, JOB, NODES = "7@1800000000", "7", "n1,n2"

STUB = r"""#!/bin/bash
# stand-in for Slurm's {name}: logs the call, answers from $SLURM_STATE
echo "{name} $*" >> "$SLURM_STATE/calls"
state=$SLURM_STATE
case "{name} $1" in
  "sinfo "*) cat "$state/held_members" 2>/dev/null; exit 0 ;;
  "squeue "*)
    job=$(echo "$*" | sed -n 's/.*-j \([^ ]*\).*/\1/p')
    if [[ "$*" == *"%u"* ]]; then echo alice; exit 0; fi
    cat "$state/job_$job" 2>/dev/null; exit 0 ;;
  "scontrol show")
    if [[ $3 == -o || $2 == reservation && -z ${3:-} ]]; then cat "$state/reservations" 2>/dev/null; exit 0; fi
    grep -q "^ReservationName=$3 " "$state/reservations" 2>/dev/null ;;
  "scontrol create")
    [[ -e $state/refuse_reservation ]] && { echo "Requested reservation overlaps with another reservation" >&2; exit 1; }
    name=$(echo "$*" | sed -n 's/.*ReservationName=\([^ ]*\).*/\1/p')
    echo "ReservationName=$name Nodes=x" >> "$state/reservations" ;;
  "scontrol delete")
    name=${2#ReservationName=}
    grep -v "^ReservationName=$name " "$state/reservations" > "$state/r.tmp"; mv "$state/r.tmp" "$state/reservations" ;;
  "scontrol update")
    if [[ "$*" == *"State=RESUME"* ]]; then
      # as Slurm: RESUME of a node that is neither drained nor down is refused
      [[ -s $state/held_members ]] || { echo "slurm_update error: Invalid node state specified" >&2; exit 1; }
      rm -f "$state/held_members"
    fi
    exit 0 ;;
  *) exit 0 ;;
esac
"""


def _script(gang=GANG):
    with open(os.path.join(ROOT, "playbooks", "admit.yml")) as handle:
        play = yaml.safe_load(handle)[0]
    task = next(t for t in play["tasks"] if t["name"].startswith("Reserve the members"))
    text = task["ansible.builtin.shell"]
    for expr, value in (("gpufleet_nodes_csv | quote", NODES), ("gpufleet_gang_id | default('') | quote", gang),
                        ("gpufleet_admit_job | default('') | quote", JOB)):
        text = text.replace("{{ %s }}" % expr, value)
    assert "{{" not in text, text
    return text


@pytest.fixture
def slurm(tmp_path):
    bin_dir, state = slurm_stubs.install(tmp_path, ("scontrol", "sinfo", "squeue"),
                                         lambda name: STUB.replace("{name}", name))

    def run(gang=GANG):
        env = dict(os.environ, PATH="%s:%s" % (bin_dir, os.environ["PATH"]), SLURM_STATE=str(state))
        proc = subprocess.run(["bash", "-c", _script(gang)], env=env, capture_output=True, text=True, timeout=30)
        calls = (state / "calls").read_text().splitlines() if (state / "calls").exists() else []
        return proc, calls
    return state, run


def _given(state, **files):
    """What the stand-in Slurm answers from: state file name -> its text."""
    for name, text in files.items():
        (state / name).write_text(text)


def _mutations(calls):
    return [c for c in calls if re.match(r"scontrol (update|create|delete|hold|release)", c)]


def test_first_admission_holds_reserves_resumes_binds_and_releases(slurm):
    state, run = slurm
    _given(state, job_7="PENDING\n", held_members="n1\nn2\n")
    proc, calls = run()
    assert proc.returncode == 0, proc.stderr
    assert _mutations(calls) == [
        "scontrol hold 7",
        "scontrol create reservation ReservationName=7@1800000000 Nodes=n1,n2 StartTime=now Duration=UNLIMITED "
        "Users=alice Flags=IGNORE_JOBS,PURGE_COMP=00:01:00",
        "scontrol update NodeName=n1,n2 State=RESUME",
        "scontrol update JobId=7 ReservationName=7@1800000000",
        "scontrol release 7"]


def test_a_stale_gang_reservation_of_an_ended_job_is_deleted_first_a_live_one_kept(slurm):
    state, run = slurm
    _given(state, job_7="PENDING\n", job_3="RUNNING\n",
           reservations="ReservationName=1@1700000000 Nodes=n1\nReservationName=3@1700000100 Nodes=n9\n"
                        "ReservationName=maint Nodes=n5\n")
    proc, calls = run()
    assert proc.returncode == 0, proc.stderr
    assert "scontrol delete ReservationName=1@1700000000" in calls
    assert not [c for c in calls if "delete ReservationName=3@" in c or "delete ReservationName=maint" in c]


def test_a_retry_after_a_partial_run_resumes_nothing_twice_and_releases_the_job(slurm):
    state, run = slurm
    _given(state, job_7="PENDING\n",                   # held by the earlier attempt
           reservations="ReservationName=7@1800000000 Nodes=n1,n2\n")
    proc, calls = run()                                  # no held_members: all already resumed
    assert proc.returncode == 0, proc.stderr
    assert not [c for c in calls if "State=RESUME" in c]
    assert _mutations(calls)[-2:] == ["scontrol update JobId=7 ReservationName=7@1800000000", "scontrol release 7"]


def test_a_refused_reservation_drains_the_members_again_and_releases_the_job(slurm):
    state, run = slurm
    _given(state, job_7="PENDING\n", held_members="n1,n2\n", refuse_reservation="")
    proc, calls = run()
    assert proc.returncode != 0
    assert _mutations(calls)[-2:] == [
        'scontrol update NodeName=n1,n2 State=DRAIN Reason=gpufleet:admission of 7@1800000000 failed; held again',
        "scontrol release 7"]


def test_a_plain_resume_also_frees_its_nodes_from_a_stale_gang_reservation(slurm):
    state, run = slurm
    _given(state, held_members="n1\n", reservations="ReservationName=1@1700000000 Nodes=n1\n")
    proc, calls = run(gang="''")
    assert proc.returncode == 0, proc.stderr
    assert _mutations(calls) == ["scontrol delete ReservationName=1@1700000000",
                                 "scontrol update NodeName=n1 State=RESUME"]
