"""Lab-only ``nvidia-smi`` simulation: ``--query-gpu ... --format=csv [-l/-lms]``, ``-q [-d]``, ``-L``,
``nvlink --status``.

SIMULATION ONLY. Prints nvidia-smi's real formats with values from the node's hardware model.
A plain query and ``-q`` show the GPUs at rest (reason Idle, SM 345 MHz) with the cumulative
clock-event counters of the load they ran (model.clock_counters). The loop modes (``-l``,
``-lms``) sample GPUs under full load: the gate loops nvidia-smi only beside gpu-burn, and the
shim, which does not sleep, cannot see the burn. A healthy GPU is then power-capped (reason
0x4, 1410 MHz, as a real H100 at 700 W); a ``thermal_slowdown`` GPU is thermally slowed.
"""
import sys
import time

from simtools import model as hwmodel

_REASONS = (("gpu_idle", 0x1), ("applications_clocks_setting", 0x2), ("sw_power_cap", 0x4), ("hw_slowdown", 0x8),
            ("sync_boost", 0x10), ("sw_thermal_slowdown", 0x20), ("hw_thermal_slowdown", 0x40),
            ("hw_power_brake_slowdown", 0x80), ("display_clock_setting", 0x100))
_SAMPLES = 4  # loop-mode samples printed before the shim exits (a real nvidia-smi loops until killed)


def _mask(model, index, loaded):
    return model.loaded_reasons(index)[0] if loaded else 0x1


def _sm(model, index, loaded):
    return model.loaded_reasons(index)[1] if loaded else hwmodel.IDLE_SM_MHZ


def _reason_field(bit):
    return ("", lambda m, i, loaded=False: "Active" if _mask(m, i, loaded) & bit else "Not Active")

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
    "clocks.max.sm": ("MHz", lambda m, i: str(hwmodel.MAX_SM_MHZ)),
}
# Fields whose value depends on load (loop mode samples a loaded GPU): f(model, index, loaded).
_LOAD_FIELDS = {
    "clocks.sm": ("MHz", lambda m, i, loaded=False: str(_sm(m, i, loaded))),
    "clocks.current.sm": ("MHz", lambda m, i, loaded=False: str(_sm(m, i, loaded))),
}
for _prefix in ("clocks_event_reasons.", "clocks_throttle_reasons."):
    _LOAD_FIELDS[_prefix + "active"] = ("", lambda m, i, loaded=False: "0x%016x" % _mask(m, i, loaded))
    for _name, _bit in _REASONS:
        _LOAD_FIELDS[_prefix + _name] = _reason_field(_bit)


def _field(name):
    return _FIELDS.get(name) or _LOAD_FIELDS.get(name)


def _query(model, fields, fmt, samples=1):
    """One CSV report, or ``samples`` of them under load (loop mode prints the header once)."""
    opts = fmt.split(",")
    if opts[0] != "csv":
        sys.stderr.write('"%s" is not a valid format.\n' % fmt)
        return 2
    for field in fields:
        if _field(field) is None:
            sys.stdout.write('Field "%s" is not a valid field to query.\n\n' % field)
            return 2
    if "noheader" not in opts:
        heads = []
        for field in fields:
            unit = _field(field)[0]
            heads.append("%s [%s]" % (field, unit) if unit and "nounits" not in opts else field)
        print(", ".join(heads))
    for _sample in range(samples):
        for index in model.gpu_indexes():
            values = []
            for field in fields:
                unit, func = _field(field)
                value = func(model, index, True) if field in _LOAD_FIELDS and samples > 1 else func(model, index)
                values.append(value + " " + unit if unit and "nounits" not in opts else value)
            print(", ".join(values))
        sys.stdout.flush()
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
    loop = "-l" in argv or "-lms" in argv
    for arg in argv:
        if arg.startswith("--query-gpu="):
            fields = [f.strip() for f in arg.split("=", 1)[1].split(",") if f.strip()]
        elif arg.startswith("--format="):
            fmt = arg.split("=", 1)[1]
    if fields is not None:
        return _query(model, fields, fmt or "", _SAMPLES if loop else 1)
    if argv[:1] == ["-q"]:
        from simtools import nvidia_smi_q
        return nvidia_smi_q.main(model, argv[1:])
    if argv[:1] == ["-L"]:
        return _list(model)
    if argv[:1] == ["nvlink"] and ("--status" in argv or "-s" in argv):
        return _nvlink_status(model)
    sys.stderr.write("hwsim nvidia-smi: unsupported arguments %s (simulation supports "
                     "--query-gpu/--format [-l/-lms], -q [-d], -L, nvlink --status)\n" % " ".join(argv))
    return 2
