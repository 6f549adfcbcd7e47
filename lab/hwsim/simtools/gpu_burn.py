"""Lab-only ``gpu_burn`` simulation (gpu-burn progress lines and the per-GPU OK/FAULTY summary).

SIMULATION ONLY. Like many gpu-burn builds, it exits 0 even when a GPU is FAULTY: the gate
must read the summary, never the exit code. It does not sleep for the requested seconds, but
records them: ``nvidia-smi -q``'s clock-event counters grow by them (model.clock_counters).
It ends once a clock sampler running beside it (loop-mode ``nvidia-smi``) has printed its
samples, as a real burn outlasts them.
"""
import os
import sys
import time


def _progress(model, gpus, pct, errors):
    procd = " - ".join("%d (%d Gflop/s)" % (2261 * pct // 50, model.data["burn"]["gflops"]) for _ in gpus)
    errs = " - ".join(str(errors[g]) for g in gpus)
    temps = " - ".join("%d C" % (55 + g % 4) for g in gpus)
    return "%.1f%%  proc'd: %s   errors: %s   temps: %s " % (pct, procd, errs, temps)


def _samplers():
    """PIDs of loop-mode nvidia-smi runs in this node (the gate's clock sampler beside the burn)."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as handle:
                args = handle.read().split(b"\0")
        except OSError:  # gone meanwhile, or not ours to read
            continue
        if any(a.endswith(b"nvidia-smi") for a in args) and (b"-lms" in args or b"-l" in args):
            found.append(int(pid))
    return found


def _await_samplers(seconds, clock=time.monotonic, sleep=time.sleep):
    """Return once no sampler runs, or after ``seconds``. A real burn outlasts the sampler's first
    samples by minutes; this one would end in milliseconds, and on a loaded host it could end
    before the sampler (started first) printed anything, leaving the gate no samples under load."""
    deadline = clock() + seconds
    while _samplers() and clock() < deadline:
        sleep(0.05)


def main(model, argv):
    seconds = 10
    for arg in argv:
        if arg.isdigit():
            seconds = int(arg)
    gpus = model.gpu_indexes()
    if not gpus:
        print("No CUDA devices")
        return 1
    for g in gpus:
        print("GPU %d: %s (UUID: %s)" % (g, model.gpus["model"], model.uuid(g)))
    errors = dict((g, 0) for g in gpus)
    for pct in (25.0, 50.0, 75.0, 100.0):
        for g in gpus:
            if model.is_faulty(g):
                errors[g] += 1373 * int(pct // 25)
        print(_progress(model, gpus, int(pct), errors))
        print("\tSummary at:   Thu Jan  1 00:00:%02d UTC 2026" % min(59, int(seconds * pct / 100) % 60))
        print("")
    for g in gpus:
        mem = int(model.gpus["memory_mib"])
        print("Initialized device %d with %d MB of memory (%d MB available, using %d MB of it), using FLOATS"
              % (g, mem, mem - 760, int((mem - 760) * 0.9)))
    _await_samplers(seconds)
    print("Killing processes.. Freed memory for dev %s" % ", ".join(str(g) for g in gpus))
    print("done")
    print("")
    print("Tested %d GPUs:" % len(gpus))
    for g in gpus:
        print("\tGPU %d: %s" % (g, "FAULTY" if errors[g] else "OK"))
    sys.stdout.flush()
    model.record("burn_s", seconds)  # the clock-event counters grow by the time burnt
    return 0
