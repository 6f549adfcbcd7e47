"""Lab-only ``nvidia-smi`` simulation: ``--query-gpu ... --format=csv``, ``-L``, ``nvlink --status``.

SIMULATION ONLY. Prints nvidia-smi's real formats with values from the node's hardware model.
"""
import sys
import time

# field -> (header unit, value function(model, index))
_FIELDS = {
    "timestamp": ("", lambda m, i: time.strftime("%Y/%m/%d %H:%M:%S.000")),
    "index": ("", lambda m, i: str(i)),
    "name": ("", lambda m, i: m.gpus["model"]),
    "uuid": ("", lambda m, i: m.uuid(i)),
    "pci.bus_id": ("", lambda m, i: m.bus_id(i)),
    "driver_version": ("", lambda m, i: m.gpus["driver_version"]),
    "pstate": ("", lambda m, i: "P0"),
    "memory.total": ("MiB", lambda m, i: str(m.gpus["memory_mib"])),
    "memory.used": ("MiB", lambda m, i: "0"),
    "temperature.gpu": ("", lambda m, i: str(31 + i % 4)),
    "power.draw": ("W", lambda m, i: "%.2f" % (70.5 + i)),
    "ecc.mode.current": ("", lambda m, i: "Enabled"),
    "ecc.errors.corrected.volatile.total": ("", lambda m, i: str(m.ecc(i)["corrected"])),
    "ecc.errors.uncorrected.volatile.total": ("", lambda m, i: str(m.ecc(i)["uncorrected"])),
    "ecc.errors.corrected.aggregate.total": ("", lambda m, i: str(m.ecc(i)["corrected"])),
    "ecc.errors.uncorrected.aggregate.total": ("", lambda m, i: str(m.ecc(i)["uncorrected"])),
    "retired_pages.sbe": ("", lambda m, i: "0"),
    "retired_pages.dbe": ("", lambda m, i: "0"),
    "retired_pages.pending": ("", lambda m, i: "No"),
    "remapped_rows.correctable": ("", lambda m, i: "0"),
    "remapped_rows.uncorrectable": ("", lambda m, i: str(m.ecc(i)["uncorrected"])),
    "remapped_rows.pending": ("", lambda m, i: "Yes" if m.ecc(i)["uncorrected"] else "No"),
    "remapped_rows.failure": ("", lambda m, i: "No"),
}


def _query(model, fields, fmt):
    opts = fmt.split(",")
    if opts[0] != "csv":
        sys.stderr.write('"%s" is not a valid format.\n' % fmt)
        return 2
    for field in fields:
        if field not in _FIELDS:
            sys.stdout.write('Field "%s" is not a valid field to query.\n\n' % field)
            return 2
    if "noheader" not in opts:
        heads = []
        for field in fields:
            unit = _FIELDS[field][0]
            heads.append("%s [%s]" % (field, unit) if unit and "nounits" not in opts else field)
        print(", ".join(heads))
    for index in model.gpu_indexes():
        values = []
        for field in fields:
            unit, func = _FIELDS[field]
            value = func(model, index)
            values.append(value + " " + unit if unit and "nounits" not in opts else value)
        print(", ".join(values))
    return 0


def _list(model):
    for index in model.gpu_indexes():
        print("GPU %d: %s (UUID: %s)" % (index, model.gpus["model"], model.uuid(index)))
    return 0


def _nvlink_status(model):
    links = int(model.data["nvlink"]["links"])
    speed = float(model.data["nvlink"]["link_gbps"])
    for index in model.gpu_indexes():
        print("GPU %d: %s (UUID: %s)" % (index, model.gpus["model"], model.uuid(index)))
        factor = model.nvlink_factor(index)
        if factor <= 0:
            print("NVML: Unable to retrieve NVLink information as all links are inactive")
            continue
        active = max(1, int(round(links * factor)))
        for link in range(links):
            print("\t Link %d: %s" % (link, ("%g GB/s" % speed) if link < active else "<inactive>"))
    return 0


def main(model, argv):
    fields = fmt = None
    for arg in argv:
        if arg.startswith("--query-gpu="):
            fields = [f.strip() for f in arg.split("=", 1)[1].split(",") if f.strip()]
        elif arg.startswith("--format="):
            fmt = arg.split("=", 1)[1]
    if fields is not None:
        return _query(model, fields, fmt or "")
    if argv[:1] == ["-L"]:
        return _list(model)
    if argv[:1] == ["nvlink"] and ("--status" in argv or "-s" in argv):
        return _nvlink_status(model)
    sys.stderr.write("hwsim nvidia-smi: unsupported arguments %s (simulation supports "
                     "--query-gpu/--format, -L, nvlink --status)\n" % " ".join(argv))
    return 2
