"""Lab-only ``mpirun`` simulation: starts the command once on this node for all hosts.

SIMULATION ONLY. Parses OpenMPI's ``-H/--host a,b``, ``-np N`` and ``-x VAR`` and runs the
command with GPUFLEET_HWSIM_PEERS set, so the nccl-tests shim can read every participant's
hardware model from the fleet directory. A host without a model is reported like an
unreachable host.
"""
import os
import sys

from simtools import model as hwmodel

_WITH_VALUE = ("-np", "-n", "-x", "--map-by", "--bind-to", "-mca", "--mca", "--rank-by", "-N")


def _split(argv):
    hosts, np_, i = [], None, 0
    while i < len(argv):
        arg = argv[i]
        if arg in ("-H", "--host", "-host"):
            hosts = [h.split(":")[0] for h in argv[i + 1].split(",") if h]
            i += 2
        elif arg in ("-np", "-n"):
            np_ = int(argv[i + 1])
            i += 2
        elif arg in ("-mca", "--mca"):
            i += 3
        elif arg in _WITH_VALUE:
            i += 2
        elif arg.startswith("-"):
            i += 1
        else:
            return hosts, np_, argv[i:]
    return hosts, np_, []


def main(model, argv):
    hosts, np_, command = _split(argv)
    if not command:
        sys.stderr.write("mpirun (hwsim): no executable given\n")
        return 1
    for host in hosts:
        if host == model.node:
            continue
        try:
            hwmodel.load_peer(host)
        except hwmodel.ModelError:
            sys.stderr.write("--------------------------------------------------------------------------\n"
                             "ORTE was unable to reliably start one or more daemons.\n"
                             "This usually is caused by: host %s is not reachable (hwsim: no model in "
                             "the fleet directory).\n"
                             "--------------------------------------------------------------------------\n" % host)
            return 1
    env = dict(os.environ)
    env["GPUFLEET_HWSIM_PEERS"] = ",".join(hosts or [model.node])
    env["GPUFLEET_HWSIM_NP"] = str(np_ or 1)
    sys.stdout.flush()
    os.execvpe(command[0], command, env)
    return 127
