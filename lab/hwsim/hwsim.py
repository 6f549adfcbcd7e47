#!/usr/bin/env python3
"""Lab-only hardware simulation: dispatch ``hwsim.py <tool> [args...]`` to the tool's shim.

SIMULATION ONLY. Never part of an image or a production path: the lab mounts this folder
read-only into node containers (``/opt/gpufleet-lab-hwsim``) and puts ``bin/`` first on the
gate's PATH. Stdlib only. See docs/lab-hwsim.md for the model format and the mount contract.
"""
import os
import signal
import sys


from simtools import model as hwmodel  # noqa: E402

TOOLS = {
    "nvidia-smi": "nvidia_smi",
    "dcgmi": "dcgmi",
    "nvbandwidth": "nvbandwidth",
    "all_reduce_perf": "nccl",
    "gpu_burn": "gpu_burn",
    "ib_write_bw": "perftest",
    "dmesg": "kernel_log",
    "mpirun": "mpirun",
}


def main(argv):
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    if not argv or argv[0] not in TOOLS:
        sys.stderr.write("usage: hwsim.py {%s} [args...]\n" % ",".join(sorted(TOOLS)))
        return 2
    try:
        model = hwmodel.load_model()
    except hwmodel.ModelError as exc:
        sys.stderr.write("%s\n" % exc)
        return 3
    module = __import__("simtools." + TOOLS[argv[0]], fromlist=["main"])
    return module.main(model, argv[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
