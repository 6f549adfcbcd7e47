#!/usr/bin/env bash
# Bind a replacement node to the job that lost a member ("replace, then repair", docs/day2.md);
# run on the slurmctld host by playbooks/admit.yml (the day-2 resume) and
# playbooks/bind_replacement.yml (the day-2 bind).
#
#   replacement_reservation.sh JOB RESERVATION NODES SPARE [FAILED]
#     JOB          the job that lost a member (running, or pending again after its requeue)
#     RESERVATION  JOB@EPOCH, the controller's naming: admit_members.sh deletes one whose job is gone
#     NODES        the job's surviving nodes and the spare, comma-separated
#     SPARE        the hot node to resume ('' = bind only)
#     FAILED       the job's failed members the spare replaces, comma-separated ('' = none): taken
#                  out of the job's own gang reservation, so the requeued job starts on exactly its
#                  survivors and the spare, never on a failed member once repaired (the lab's
#                  requeued job waited Slurm's 120 s requeue delay, took the repaired member and
#                  left the spare idle)
#
# While the job runs, the reservation is created on NODES for the job's owner (IGNORE_JOBS: the
# survivors still run the job) -- or, when the job already runs in its own gang reservation of
# that name, the spare is added to it and the failed members taken out -- and the spare is
# resumed inside it, so no other user's job takes
# the spare or, once the job is requeued, the survivors. It has no PURGE_COMP yet: with no job
# in it, Slurm would purge it a minute later (tried on the lab's slurmctld 22.05). Once the
# job is pending again it is bound to the reservation and PURGE_COMP=00:01:00 is set: the
# reservation then goes a minute after the job. A job that is gone: the reservation is deleted
# (the spare, if given, is still resumed: it is hot capacity). Safe to repeat: the reservation
# is created once, only a drained spare is resumed, a bound job is left as it is. On a failure
# a spare this run resumed is drained again, so nothing is schedulable outside the reservation.
set -Eeuo pipefail
job=$1 resv=$2 nodes=$3 spare=$4 failed=${5:-}

resumed=''
undo() {
  [[ -z $resumed ]] || scontrol update NodeName="$resumed" State=DRAIN \
    Reason="gpufleet:replacement for job $job failed; held again"
}
trap undo ERR

resume_spare() {
  [[ -n $spare ]] || return 0
  held=$(sinfo -h -N -n "$spare" -t drain,drained,draining,down -o %N | sort -u | paste -sd, -)
  [[ -z $held ]] && return 0
  scontrol update NodeName="$held" State=RESUME
  resumed=$held
  echo "resumed $held"
}

state=$(squeue -h -j "$job" -o %T 2>/dev/null || true)
if [[ -z $state ]]; then
  if scontrol show reservation "$resv" >/dev/null 2>&1; then
    scontrol delete ReservationName="$resv"
    echo "deleted $resv: job $job is gone"
  fi
  resume_spare
  exit 0
fi

reserve() {
  if scontrol show reservation "$resv" >/dev/null 2>&1; then
    # the job's own gang reservation (the controller admitted it with one), or ours from an
    # earlier run: every node of NODES in it, the failed members out (Slurm 22.05 updates the
    # nodes of a reservation a job is bound to; tried on the lab's slurmctld)
    current=$(scontrol show reservation "$resv" -o | sed -n 's/.* Nodes=\([^ ]*\) .*/\1/p')
    have=" $(scontrol show hostnames "$current" | paste -sd' ' -) "
    gone=" ${failed//,/ } "
    keep='' missing='' dropped=''
    for node in $have; do
      if [[ $gone == *" $node "* ]]; then dropped=${dropped:+$dropped,}$node; else keep=${keep:+$keep,}$node; fi
    done
    for node in ${nodes//,/ }; do
      [[ $have == *" $node "* ]] || missing=${missing:+$missing,}$node
    done
    [[ -z $missing && -z $dropped ]] && return 0
    scontrol update ReservationName="$resv" Nodes="$keep${keep:+${missing:+,}}$missing" || return 1
    [[ -z $missing ]] || echo "added $missing to $resv"
    [[ -z $dropped ]] || echo "took the failed $dropped out of $resv"
    return 0
  fi
  owner=$(squeue -h -j "$job" -o %u)
  # (called under `if`, where errexit is off: the create's status must be the function's)
  scontrol create reservation ReservationName="$resv" Nodes="$nodes" StartTime=now \
    Duration=UNLIMITED Users="$owner" Flags=IGNORE_JOBS || return 1
  echo "reserved $nodes for job $job ($owner)"
}
if reserve; then
  resume_spare
else
  # a Slurm that refuses a reservation on a drained node: resume the spare, then reserve
  resume_spare
  reserve
fi

if [[ $state == PENDING && $(squeue -h -j "$job" -o %v) != "$resv" ]]; then
  scontrol update JobId="$job" ReservationName="$resv"
  scontrol update ReservationName="$resv" Flags=PURGE_COMP=00:01:00
  echo "bound job $job to $resv"
fi
echo "job $job $state; reservation $resv on $nodes"
