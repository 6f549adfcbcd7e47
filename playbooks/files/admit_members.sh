#!/usr/bin/env bash
# Make admitted nodes schedulable in Slurm; run on the slurmctld host by playbooks/admit.yml
# (the capacity controller's resume and gang admission) and playbooks/tasks/gang_admit.yml
# (playbooks/gang.yml). One script for both: the same fault left either stuck for good.
#
#   admit_members.sh NODES GANG JOB USERS
#     NODES  comma-separated members
#     GANG   reservation name ('' = a plain resume: no reservation, no job)
#     JOB    pending job to bind to the reservation ('' = none: the reservation serves USERS)
#     USERS  reservation users ('' = the job's owner, else root)
#
# Safe to repeat after a failed or killed run: only members still drained or down are resumed
# (Slurm refuses RESUME on an idle node), the reservation is created once, a job held by an
# earlier run is bound and released. Gang reservations of the controller (JOB@EPOCH) whose job
# ended are deleted first, for a gang and for plain resumes alike: PURGE_COMP removes one a
# minute after its job at the earliest, and a member freed since (parked, woken, resumed for
# another job) would stay reserved for a job that is gone, or make the new reservation overlap.
# On any failure the members this run resumed are drained again and the job is released, so
# nothing is left schedulable outside the gang and no job stays held.
set -Eeuo pipefail   # -E: the undo trap also fires for a failure inside a function
nodes=$1 gang=$2 job=$3 users=$4

held_members() {
  sinfo -h -N -n "$nodes" -t drain,drained,draining,down -o %N | sort -u | paste -sd, -
}

scontrol show reservation -o 2>/dev/null | while read -r line; do
  name=${line#ReservationName=}
  name=${name%% *}
  [[ $name =~ ^([0-9]+)@[0-9]+$ && $name != "$gang" ]] || continue
  [[ -z $(squeue -h -j "${BASH_REMATCH[1]}" -o %T 2>/dev/null || true) ]] || continue
  if scontrol delete ReservationName="$name"; then echo "deleted stale reservation $name"; fi
done

if [[ -z $gang ]]; then
  todo=$(held_members)
  [[ -z $todo ]] || scontrol update NodeName="$todo" State=RESUME
  exit 0
fi

held='' resumed=''
undo() {
  [[ -z $resumed ]] || scontrol update NodeName="$resumed" State=DRAIN \
    Reason="gpufleet:admission of $gang failed; held again"
  [[ -z $held ]] || scontrol release "$job"
}
trap undo ERR

# A reservation for one job goes a minute after that job (PURGE_COMP); one without a job
# (gang.yml) stays for its users until the gang is rolled back or a person deletes it.
flags=IGNORE_JOBS
if [[ -n $job ]]; then
  flags=IGNORE_JOBS,PURGE_COMP=00:01:00
  if [[ $(squeue -h -j "$job" -o %T 2>/dev/null || true) == PENDING ]]; then
    [[ -n $users ]] || users=$(squeue -h -j "$job" -o %u)
    # held: it cannot start on anything until it is bound to the reservation below
    scontrol hold "$job"
    held=1
  fi
fi
users=${users:-root}

reserve() {
  scontrol show reservation "$gang" >/dev/null 2>&1 && return 0
  scontrol create reservation ReservationName="$gang" Nodes="$nodes" StartTime=now \
    Duration=UNLIMITED Users="$users" Flags="$flags"
}
resume() {
  resumed=$(held_members)
  [[ -z $resumed ]] || scontrol update NodeName="$resumed" State=RESUME
}
if reserve; then
  resume
else
  # a Slurm that refuses a reservation on drained nodes: resume all members in one call
  # first (a job is held, so it cannot start on part of them), then reserve
  resume
  reserve
fi
if [[ -n $held ]]; then
  scontrol update JobId="$job" ReservationName="$gang"
  scontrol release "$job"
fi
