#!/usr/bin/env bash
# Hold idle nodes in Slurm for the day-2 idle health check, and let them go after; run on the
# slurmctld host by playbooks/health_check.yml. Without the hold, a job Slurm starts on a
# joined node after the check's look for a job step would share the node with DCGM level 1.
#
#   health_hold.sh hold NODES     drain the nodes that are idle (reason "gpufleet:health check";
#                                 prints "drained N1,N2"), then print "check NODE" for each node
#                                 a check may run on: drained with no job (hot nodes are held
#                                 already)
#   health_hold.sh release NODES  resume the nodes whose drain reason is still the check's
#                                 (also those a killed earlier run left held)
#
# Only the state "idle" exactly is drained: drained, down, powered-off (~) or not-responding
# (*) nodes are not the check's to change. Release touches nothing whose reason is another's,
# so a hot node's hold and a person's drain stay as they were.
set -Eeuo pipefail
mode=${1:-} nodes=${2:-}
REASON="gpufleet:health check"

# "node state" per line for NODES (sinfo repeats a node once per partition)
states() { sinfo -h -N -n "$nodes" -o '%N %T' | sort -u; }

case $mode in
  hold)
    idle=$(states | awk '$2 == "idle" {print $1}' | paste -sd, -)
    if [[ -n $idle ]]; then
      scontrol update NodeName="$idle" State=DRAIN Reason="$REASON"
      echo "drained $idle"
    fi
    # a node a job reached first is "draining" (or mixed/allocated): not checked
    states | awk '$2 == "drained" {print "check " $1}'
    ;;
  release)
    ours=$(sinfo -h -N -n "$nodes" -o '%N|%E' | sort -u \
           | awk -F'|' -v reason="$REASON" '$2 == reason {print $1}' | paste -sd, -)
    [[ -z $ours ]] || scontrol update NodeName="$ours" State=RESUME
    [[ -z $ours ]] || echo "released $ours"
    ;;
  *)
    echo "usage: health_hold.sh hold|release NODES (comma-separated)" >&2
    exit 2
    ;;
esac
