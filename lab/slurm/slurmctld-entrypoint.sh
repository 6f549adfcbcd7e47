#!/bin/bash
# Entry point of gpufleet/slurmctld:bookworm. Renders slurm.conf from the environment
# (unless one is mounted at /etc/gpufleet/slurm.conf), installs the munge key mounted at
# /etc/gpufleet/munge.key, starts munged, then runs slurmctld in the foreground.
# Nodes join "configless": slurmd --conf-server <this container> fetches slurm.conf.
# Nodes are State=CLOUD with cloud_reg_addrs: their address comes from their registration,
# so node containers may start (and get their IP) after the controller, as in the lab.
# On a fresh state every node is drained with the hold reason before any can register:
# only cluster_join resumes a node, after its acceptance gate passed.
set -euo pipefail
CLUSTER=${GPUFLEET_SLURM_CLUSTER:-gpufleet}
NODES=${GPUFLEET_SLURM_NODES:?set GPUFLEET_SLURM_NODES, e.g. node[01-08]}
# Configured resources stay below what a container reports; config_overrides keeps them.
NODE_CONF=${GPUFLEET_SLURM_NODE_CONF:-CPUs=1 RealMemory=64}
HOLD_REASON=${GPUFLEET_SLURM_HOLD_REASON:-gpufleet:awaiting-acceptance-gate}
PARTITION=${GPUFLEET_SLURM_PARTITION:-batch}
KEY=/etc/gpufleet/munge.key

[[ -s $KEY ]] || { echo "no munge key at $KEY: mount one (docker run -v key:$KEY:ro)" >&2; exit 2; }
install -o munge -g munge -m 0400 "$KEY" /etc/munge/munge.key
install -d -o munge -g munge -m 0755 /run/munge

if [[ -s /etc/gpufleet/slurm.conf ]]; then
  cp /etc/gpufleet/slurm.conf /etc/slurm/slurm.conf
else
  cat >/etc/slurm/slurm.conf <<CONF
# Rendered by gpufleet-slurmctld from the container environment.
ClusterName=${CLUSTER}
SlurmctldHost=$(hostname -s)
SlurmctldParameters=enable_configless,cloud_reg_addrs
SlurmUser=slurm
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
# Containers have no writable cgroup tree: track processes by /proc, no task binding.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SlurmdParameters=config_overrides
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=1
SlurmctldTimeout=30
SlurmdTimeout=30
MpiDefault=none
NodeName=${NODES} ${NODE_CONF} State=CLOUD
PartitionName=${PARTITION} Nodes=ALL Default=YES MaxTime=INFINITE State=UP
${GPUFLEET_SLURM_CONF_EXTRA:-}
CONF
fi
runuser -u munge -- /usr/sbin/munged
fresh=0
[[ -e /var/spool/slurmctld/node_state ]] || fresh=1
/usr/sbin/slurmctld -D -i &
pid=$!
trap 'kill -TERM "$pid"' TERM INT
for _ in $(seq 1 60); do scontrol ping >/dev/null 2>&1 && break; sleep 0.5; done
if [[ $fresh == 1 ]]; then
  scontrol update NodeName="${NODES}" State=DRAIN Reason="${HOLD_REASON}"
fi
touch /run/gpufleet-slurmctld.ready
# A trapped TERM (docker stop/restart) ends the first wait at once. Wait again until slurmctld
# has saved its state and exited: this script is the container's PID 1, and its exit kills
# slurmctld mid-shutdown, losing what it had not saved yet (a reservation made seconds before).
status=0
wait "$pid" || status=$?
while kill -0 "$pid" 2>/dev/null; do
  status=0
  wait "$pid" || status=$?
done
exit "$status"
