"""Lab-only ``nvidia-smi -q [-d PERFORMANCE,ECC,ROW_REMAPPER,CLOCK]``: the text report's sections.

SIMULATION ONLY. The layout follows a real driver 580 capture on an H100 80GB HBM3
(/work/shared/fixtures/real-outputs/nvidia_smi_q_perf_ecc_1xH100_driver580_idle.txt) and the
``Fabric`` section of driver 550 captures. Without ``-d`` every section is printed. The
"Clocks Event Reasons Counters" section is printed for drivers 575 and later only: real
575, 580 and 595 reports have it, real 550.127 and 570.124 reports do not.
"""
import sys
import time

from simtools import model as hwmodel

_WIDTH = 55
_DISPLAYS = ("PERFORMANCE", "ECC", "ROW_REMAPPER", "CLOCK")
_REASON_LINES = (("Idle", 0x1, 2), ("Applications Clocks Setting", 0x2, 2), ("SW Power Cap", 0x4, 2),
                 ("HW Slowdown", 0x8, 2), ("HW Thermal Slowdown", 0x40, 3), ("HW Power Brake Slowdown", 0x80, 3),
                 ("Sync Boost", 0x10, 2), ("SW Thermal Slowdown", 0x20, 2), ("Display Clock Setting", 0x100, 2))
_COUNTER_LINES = (("SW Power Capping", "sw_power_cap"), ("Sync Boost", "sync_boost"),
                  ("SW Thermal Slowdown", "sw_thermal_slowdown"), ("HW Thermal Slowdown", "hw_thermal_slowdown"),
                  ("HW Power Braking", "hw_power_brake_slowdown"))


def _line(depth, key, value=None):
    pad = "    " * depth + key
    return pad if value is None else "%s: %s" % (pad.ljust(_WIDTH), value)


def _has_counters(model):
    try:
        return int(str(model.gpus["driver_version"]).split(".")[0]) >= 575
    except ValueError:
        return False


def _performance(model, index):
    out = [_line(1, "Performance State", "P0"), _line(1, "Clocks Event Reasons")]
    for label, bit, depth in _REASON_LINES:
        out.append(_line(depth, label, "Active" if bit == 0x1 else "Not Active"))  # at rest: Idle
    if _has_counters(model):
        counters = model.clock_counters(index)
        out.append(_line(1, "Clocks Event Reasons Counters"))
        out.extend(_line(2, label, "%d us" % counters[key]) for label, key in _COUNTER_LINES)
    return out


def _ecc(model, index):
    ecc = model.ecc(index)
    out = [_line(1, "ECC Mode"), _line(2, "Current", "Enabled"), _line(2, "Pending", "Enabled"),
           _line(1, "ECC Errors")]
    for section in ("Volatile", "Aggregate"):
        out += [_line(2, section), _line(3, "SRAM Correctable", "0"), _line(3, "SRAM Uncorrectable Parity", "0"),
                _line(3, "SRAM Uncorrectable SEC-DED", "0"), _line(3, "DRAM Correctable", str(ecc["corrected"])),
                _line(3, "DRAM Uncorrectable", str(ecc["uncorrected"]))]
    return out


def _row_remapper(model, index):
    unc = model.ecc(index)["uncorrected"]
    return [_line(1, "Remapped Rows"), _line(2, "Correctable Error", "0"),
            _line(2, "Uncorrectable Error", str(unc)), _line(2, "Pending", "Yes" if unc else "No"),
            _line(2, "Remapping Failure Occurred", "No")]


def _clock(model, index):
    return [_line(1, "Clocks"), _line(2, "Graphics", "%d MHz" % hwmodel.IDLE_SM_MHZ),
            _line(2, "SM", "%d MHz" % hwmodel.IDLE_SM_MHZ), _line(2, "Memory", "2619 MHz"),
            _line(1, "Max Clocks"), _line(2, "Graphics", "%d MHz" % hwmodel.MAX_SM_MHZ),
            _line(2, "SM", "%d MHz" % hwmodel.MAX_SM_MHZ), _line(2, "Memory", "2619 MHz")]


def _fabric(model, index):
    state, status = model.fabric(index)
    return [_line(1, "Fabric"), _line(2, "State", state), _line(2, "Status", status),
            _line(2, "CliqueId", "0"), _line(2, "ClusterUUID", "00000000-0000-0000-0000-000000000000"),
            _line(2, "Health"), _line(3, "Bandwidth", "N/A")]


_SECTIONS = {"PERFORMANCE": _performance, "ECC": _ecc, "ROW_REMAPPER": _row_remapper, "CLOCK": _clock}


def main(model, argv):
    displays = list(_DISPLAYS)
    full = True
    if argv[:1] == ["-d"] and len(argv) > 1:
        displays, full = [d.strip().upper() for d in argv[1].split(",") if d.strip()], False
        unknown = [d for d in displays if d not in _SECTIONS]
        if unknown:
            sys.stderr.write("Invalid combination of input arguments. Please run 'nvidia-smi -h' for help.\n")
            return 2
    elif argv:
        sys.stderr.write("hwsim nvidia-smi -q: unsupported arguments %s (simulation supports -d <displays>)\n"
                         % " ".join(argv))
        return 2
    print("\n==============NVSMI LOG==============\n")
    print(_line(0, "Timestamp", time.strftime("%a %b %d %H:%M:%S %Y")))
    print(_line(0, "Driver Version", model.gpus["driver_version"]))
    print(_line(0, "CUDA Version", model.gpus.get("cuda_version", "12.4")))
    print("")
    print(_line(0, "Attached GPUs", str(len(model.gpu_indexes()))))
    for index in model.gpu_indexes():
        print("GPU %s" % model.bus_id(index))
        lines = [_line(1, "Product Name", model.gpus["model"])] if full else []
        for display in displays:
            lines += _SECTIONS[display](model, index)
        if full:
            lines += _fabric(model, index)
        print("\n".join(lines))
        print("")
    return 0
