"""playbooks/files/admit_members.sh, the admission script of playbooks/admit.yml (the
controller's resume and gang admission) and playbooks/tasks/gang_admit.yml (gang.yml), run
with the arguments each playbook passes against a stand-in Slurm (scontrol, sinfo, squeue as
small scripts on PATH that log every call and answer from a state folder).

The lab found admit.yml failing for good: a stale gang reservation of an ended job overlapped
the new one, the first attempt left the job held and the members resumed, and every retry then
failed on RESUME of an idle node. gang_admit.yml resumed every member unconditionally the same
way. These cases pin the repair down for both callers."""
import os
import re
import shlex
import subprocess

import jinja2
import pytest
import yaml

from tests import slurm_stubs
from tests.helpers import ROOT

GANG, JOB, NODES = "7@1800000000", "7", "n1,n2"
SCRIPT = os.path.join(ROOT, "playbooks", "files", "admit_members.sh")

STUB = slurm_stubs.CASE_STUB + r"""  "sinfo "*) cat "$state/held_members" 2>/dev/null; exit 0 ;;
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


def _task(path, name_start):
    """The task running the script in a playbook or task file (blocks searched too)."""
    with open(os.path.join(ROOT, path)) as handle:
        doc = yaml.safe_load(handle)
    todo = [t for play in doc for t in play.get("tasks", [play])]
    while todo:
        task = todo.pop(0)
        todo.extend(task.get("block", []) + task.get("rescue", []))
        if task.get("name", "").startswith(name_start):
            return task
    raise AssertionError("no task %r in %s" % (name_start, path))


def _args(path, name_start, script=SCRIPT, **variables):
    """The arguments the playbook passes to the script, its Jinja rendered with ``variables``;
    the path it names must resolve, from the task file's directory, to ``script``."""
    env = jinja2.Environment(undefined=jinja2.StrictUndefined)
    env.filters["quote"] = lambda value: shlex.quote(str(value))
    cmd = _task(path, name_start)["ansible.builtin.script"]["cmd"]
    words = shlex.split(env.from_string(cmd).render(**variables))
    assert os.path.normpath(os.path.join(ROOT, os.path.dirname(path), words[0])) == script, words[0]
    return words[1:]


def admit_args(gang=GANG, job=JOB):
    """What playbooks/admit.yml passes (the controller: a gang with its job, or neither)."""
    return _args("playbooks/admit.yml", "Reserve the members", gpufleet_nodes_csv=NODES,
                 gpufleet_gang_id=gang, gpufleet_admit_job=job)


def gang_args(users="alice"):
    """What playbooks/tasks/gang_admit.yml (gang.yml) passes: a gang a person named, no job."""
    return _args("playbooks/tasks/gang_admit.yml", "Reserve every member", gpufleet_members=["n1", "n2"],
                 gpufleet_gang_id="train-42", gpufleet_gang_users=users)


@pytest.fixture
def slurm(tmp_path):
    bin_dir, state = slurm_stubs.install(tmp_path, ("scontrol", "sinfo", "squeue"),
                                         lambda name: STUB.replace("{name}", name))

    def run(args=None):
        env = dict(os.environ, PATH="%s:%s" % (bin_dir, os.environ["PATH"]), SLURM_STATE=str(state))
        proc = subprocess.run(["bash", SCRIPT] + (admit_args() if args is None else args), env=env,
                              capture_output=True, text=True, timeout=30)
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
    proc, calls = run(admit_args(gang="", job=""))
    assert proc.returncode == 0, proc.stderr
    assert _mutations(calls) == ["scontrol delete ReservationName=1@1700000000",
                                 "scontrol update NodeName=n1 State=RESUME"]


def test_the_playbooks_pass_what_the_script_expects():
    assert admit_args() == ["n1,n2", GANG, JOB, ""]
    assert admit_args(gang="", job="") == ["n1,n2", "", "", ""]
    assert gang_args() == ["n1,n2", "train-42", "", "alice"]


def test_a_gang_of_gang_yml_is_reserved_for_its_users_then_resumed_with_no_job_and_no_purge(slurm):
    state, run = slurm
    _given(state, held_members="n1\nn2\n")
    proc, calls = run(gang_args())
    assert proc.returncode == 0, proc.stderr
    assert _mutations(calls) == [
        "scontrol create reservation ReservationName=train-42 Nodes=n1,n2 StartTime=now Duration=UNLIMITED "
        "Users=alice Flags=IGNORE_JOBS",
        "scontrol update NodeName=n1,n2 State=RESUME"]


def test_a_gang_yml_retry_after_a_partial_run_resumes_nothing_twice(slurm):
    state, run = slurm
    _given(state, reservations="ReservationName=train-42 Nodes=n1,n2\n")   # no held member left
    proc, calls = run(gang_args())
    assert proc.returncode == 0, proc.stderr
    assert _mutations(calls) == []


def test_a_gang_yml_admission_frees_its_members_from_a_stale_controller_reservation(slurm):
    state, run = slurm
    _given(state, held_members="n1,n2\n", reservations="ReservationName=1@1700000000 Nodes=n1\n")
    proc, calls = run(gang_args())
    assert proc.returncode == 0, proc.stderr
    assert _mutations(calls)[0] == "scontrol delete ReservationName=1@1700000000"


def test_a_gang_yml_refused_reservation_drains_again_only_the_members_it_resumed(slurm):
    state, run = slurm
    _given(state, held_members="n2\n", refuse_reservation="")          # n1 idle already
    proc, calls = run(gang_args())
    assert proc.returncode != 0
    create = ("scontrol create reservation ReservationName=train-42 Nodes=n1,n2 StartTime=now "
              "Duration=UNLIMITED Users=alice Flags=IGNORE_JOBS")
    assert _mutations(calls) == [create, "scontrol update NodeName=n2 State=RESUME", create,   # refused twice
                                 "scontrol update NodeName=n2 State=DRAIN "
                                 "Reason=gpufleet:admission of train-42 failed; held again"]
