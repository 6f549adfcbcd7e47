"""Lab-only ``all_reduce_perf`` (nccl-tests) simulation, new output format (Group/root/#wrong).

SIMULATION ONLY. Single node: busbw = model nccl.single_node_busbw_gbps x worst NVLink
factor. Multi node (started through the hwsim ``mpirun``, which sets GPUFLEET_HWSIM_PEERS):
busbw = the slowest participant's multi_node_busbw_gbps x its worst HCA factor. Each run is
recorded in the node's load history (model.record), where an ``ecc_under_load`` fault waits.
"""
import os
import sys

from simtools import model as hwmodel

_UNITS = {"": 1, "K": 1024, "M": 1024 ** 2, "G": 1024 ** 3}


def _size(text):
    text = text.strip().upper()
    unit = text[-1] if text[-1:] in _UNITS and not text[-1:].isdigit() else ""
    return int(float(text[:-1] if unit else text) * _UNITS[unit])


def _opts(argv):
    opts = {"-b": "8", "-e": "128M", "-f": "2", "-g": "1", "-n": "20", "-w": "5", "-c": "1"}
    for i, arg in enumerate(argv):
        if arg in opts and i + 1 < len(argv):
            opts[arg] = argv[i + 1]
    return opts


def _participants(local):
    peers = [p for p in os.environ.get("GPUFLEET_HWSIM_PEERS", "").split(",") if p]
    if not peers:
        return [local], local.data["nccl"]["single_node_busbw_gbps"] * local.worst_nvlink_factor()
    models = [local if p == local.node else hwmodel.load_peer(p) for p in peers]
    busbw = min(m.data["nccl"]["multi_node_busbw_gbps"] * m.hca_factor() * m.worst_nvlink_factor()
                for m in models)
    return models, busbw


def _print_header(opts, models, gpus_per_proc):
    print("# nccl-tests version 2.13.9 nccl-headers=21903 nccl-library=21903")
    print("# Collective test starting: all_reduce_perf")
    print("# nThread 1 nGpus %s minBytes %d maxBytes %d step: %s(factor) warmup iters: %s iters: %s "
          "agg iters: 1 validation: %s graph: 0" % (opts["-g"], _size(opts["-b"]), _size(opts["-e"]),
                                                   opts["-f"], opts["-w"], opts["-n"], opts["-c"]))
    print("#")
    print("# Using devices")
    rank = 0
    for node_no, node in enumerate(models):
        for dev in node.gpu_indexes()[:gpus_per_proc] if len(models) == 1 else node.gpu_indexes():
            print("#  Rank %2d Group  0 Pid %6d on %10s device %2d [0x%02x] %s"
                  % (rank, 4100 + node_no * 10 + (0 if len(models) == 1 else dev), node.node, dev,
                     0x18 + 0x10 * dev, node.gpus["model"]))
            rank += 1
    print("#")
    print("#                                                              out-of-place                       in-place          ")
    print("#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong")
    print("#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)       ")
    return rank


def _row(size, nranks, peak_busbw, latency_us):
    factor = 2.0 * (nranks - 1) / nranks if nranks > 1 else 1.0
    algbw_peak = peak_busbw / factor if factor else peak_busbw
    time_us = latency_us + size / (algbw_peak * 1e3)
    algbw = size / (time_us * 1e3)
    busbw = algbw * factor
    half = "%8.1f  %6.2f  %6.2f  %6d" % (time_us, algbw, busbw, 0)
    line = "%12d  %12d     float     sum      -1  %s  %s" % (size, size // 4, half, half)
    return line, busbw


def main(model, argv):
    opts = _opts(argv)
    gpus_per_proc = int(opts["-g"])
    if gpus_per_proc > len(model.gpu_indexes()):
        sys.stdout.write("%s: Test CUDA failure common.cu:892 'invalid device ordinal'\n"
                         " .. %s pid 4100: Test failure common.cu:842\n" % (model.node, model.node))
        return 2
    try:
        models, busbw = _participants(model)
    except hwmodel.ModelError as exc:
        sys.stderr.write("%s\n" % exc)
        return 1
    nranks = _print_header(opts, models, gpus_per_proc)
    size, end, step = _size(opts["-b"]), _size(opts["-e"]), max(2, int(opts["-f"]))
    total, count = 0.0, 0
    while size <= end:
        line, value = _row(size, nranks, busbw, float(model.data["nccl"]["latency_us"]))
        print(line)
        total += value
        count += 1
        size *= step
    print("# Out of bounds values : 0 OK")
    print("# Avg bus bandwidth    : %g " % round(total / max(count, 1), 4))
    print("#")
    print("# Collective test concluded: all_reduce_perf")
    print("#")
    model.record("nccl_runs", 1)  # an ecc_under_load fault shows from now on
    return 0
