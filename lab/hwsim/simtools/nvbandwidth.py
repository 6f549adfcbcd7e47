"""Lab-only ``nvbandwidth -t <testcase>`` simulation (v0.4 text format).

SIMULATION ONLY. A degraded_nvlink fault scales every pair that touches that GPU.
"""
import sys

_TESTS = {
    "device_to_device_memcpy_read_ce": ("memcpy CE GPU(row) -> GPU(column) bandwidth (GB/s)", "d2d"),
    "device_to_device_memcpy_write_ce": ("memcpy CE GPU(row) <- GPU(column) bandwidth (GB/s)", "d2d"),
    "host_to_device_memcpy_ce": ("memcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)", "h2d"),
    "device_to_host_memcpy_ce": ("memcpy CE CPU(row) <- GPU(column) bandwidth (GB/s)", "d2h"),
}


def _cell(value):
    return "%10s" % ("N/A" if value is None else "%.2f" % value)


def _header(model):
    print("nvbandwidth Version: v0.4")
    print("Built from Git version: v0.4-hwsim")
    print("")
    print("NOTE: This tool reports current measured bandwidth on your system.")
    print("Additional system-specific tuning may be required to achieve maximal peak bandwidth.")
    print("")
    print("CUDA Runtime Version: 12040")
    print("CUDA Driver Version: 12040")
    print("Driver Version: %s" % model.gpus["driver_version"])
    print("")
    for index in model.gpu_indexes():
        print("Device %d: %s" % (index, model.gpus["model"]))
    print("")


def _matrix(model, kind):
    gpus = model.gpu_indexes()
    nv = model.data["nvlink"]
    rows = []
    if kind == "d2d":
        for src in gpus:
            row = []
            for dst in gpus:
                if src == dst:
                    row.append(None)
                else:
                    factor = min(model.nvlink_factor(src), model.nvlink_factor(dst))
                    row.append(float(nv["d2d_gbps"]) * factor - 0.13 * ((src + dst) % 3))
            rows.append(("%d" % src, row))
    else:
        base = float(nv["h2d_gbps"] if kind == "h2d" else nv["d2h_gbps"])
        rows.append(("0", [base - 0.07 * (i % 3) for i in gpus]))
    return gpus, rows


def main(model, argv):
    if "-t" not in argv:
        sys.stderr.write("hwsim nvbandwidth: pass -t <testcase>; simulated: %s\n" % ", ".join(sorted(_TESTS)))
        return 2
    name = argv[argv.index("-t") + 1] if argv.index("-t") + 1 < len(argv) else ""
    if name not in _TESTS:
        sys.stderr.write("ERROR: Testcase %s not found!\n" % name)
        return 1
    title, kind = _TESTS[name]
    _header(model)
    print("Running %s." % name)
    print(title)
    gpus, rows = _matrix(model, kind)
    print(" " + "".join("%10d" % g for g in gpus))
    total = 0.0
    for label, row in rows:
        print(label + "".join(_cell(v) for v in row))
        total += sum(v for v in row if v is not None)
    print("")
    print("SUM %s %.2f" % (name, total))
    return 0
