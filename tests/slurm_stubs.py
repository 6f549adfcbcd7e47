"""Stand-in Slurm commands for tests of the shell that playbooks run on the slurmctld host:
small scripts put on PATH that log their calls and answer from a state folder."""
import stat


def install(tmp_path, names, text_for):
    """Write ``bin/<name>`` for each name (``text_for(name)`` is the script); (bin, state) dirs."""
    bindir, state = tmp_path / "bin", tmp_path / "slurm"
    bindir.mkdir()
    state.mkdir()
    for name in names:
        path = bindir / name
        path.write_text(text_for(name))
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return bindir, state


# The start of a stand-in whose answers are a bash `case "{name} $1" in` (the test adds its
# branches and `esac`): it logs each call to $SLURM_STATE/calls; {name} is the command.
CASE_STUB = r"""#!/bin/bash
# stand-in for Slurm's {name}: logs the call, answers from $SLURM_STATE
echo "{name} $*" >> "$SLURM_STATE/calls"
state=$SLURM_STATE
case "{name} $1" in
"""


# sinfo and scontrol keeping each node's "STATE|REASON" in node.<name> (sinfo -N -o '%N %T'
# or '%N|%E', each node listed twice as for two partitions; scontrol update State=DRAIN or
# RESUME with Slurm's moves: idle -> drained, or draining when job_lands.<name> says a job got
# there first; drained -> idle, draining -> mixed). playbooks/files/health_hold.sh's Slurm.
NODE_STATES = r"""#!/bin/bash
# stand-in for Slurm's {name}: logs the call; node.<name> holds "STATE|REASON"
echo "{name} $*" >> "$SLURM_STATE/calls"
state=$SLURM_STATE
case "{name}" in
  sinfo)
    nodes=$(echo "$*" | sed -n 's/.*-n \([^ ]*\).*/\1/p')
    for n in ${nodes//,/ }; do
      [[ -f $state/node.$n ]] || continue
      IFS='|' read -r st why < "$state/node.$n"
      # twice, as for a node in two partitions
      for _ in 1 2; do
        if [[ "$*" == *"%E"* ]]; then echo "$n|$why"; else echo "$n $st"; fi
      done
    done ;;
  scontrol)
    nodes=$(echo "$*" | sed -n 's/.*NodeName=\([^ ]*\).*/\1/p')
    for n in ${nodes//,/ }; do
      IFS='|' read -r st why < "$state/node.$n"
      if [[ "$*" == *"State=DRAIN"* ]]; then
        # a job that reached the node between the look and the drain leaves it draining
        if [[ -f $state/job_lands.$n ]]; then st=draining; else st=drained; fi
        all="$*"; why=${all#*Reason=}
      elif [[ "$*" == *"State=RESUME"* ]]; then
        [[ $st == drained ]] && st=idle; [[ $st == draining ]] && st=mixed; why=none
      fi
      echo "$st|$why" > "$state/node.$n"
    done ;;
esac
"""


def install_node_states(tmp_path, nodes, job_lands=()):
    """NODE_STATES as sinfo and scontrol; ``nodes``: {name: (state, reason)} -> (bin, state) dirs."""
    bindir, state = install(tmp_path, ("sinfo", "scontrol"), lambda name: NODE_STATES.replace("{name}", name))
    for node, (st, why) in nodes.items():
        (state / ("node." + node)).write_text("%s|%s\n" % (st, why))
    for node in job_lands:
        (state / ("job_lands." + node)).write_text("")
    return bindir, state


def node_states(state):
    """{node: (state, reason)} as install_node_states keeps them."""
    found = {}
    for path in sorted(state.glob("node.*")):
        found[path.name[5:]] = tuple(path.read_text().strip().split("|", 1))
    return found
