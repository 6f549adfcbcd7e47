"""Lab-only ``dcgmi diag -r <level> -j`` simulation (DCGM 3.x JSON schema).

SIMULATION ONLY. An uncorrectable ECC fault in the model fails "Page Retirement/Row Remap";
everything else passes (the FAULTY-GPU fault is for gpu_burn to find).
"""
import json
import sys

_DEPLOYMENT = ["Denylist", "NVML Library", "CUDA Main Library", "Permissions and OS Blocks",
               "Persistence Mode", "Environment Variables", "Page Retirement/Row Remap",
               "Graphics Processes", "Inforom"]
_LEVEL_TESTS = {
    2: [("Integration", ["PCIe"]), ("Hardware", ["GPU Memory"])],
    3: [("Integration", ["PCIe"]), ("Hardware", ["GPU Memory", "Diagnostic"]),
        ("Stress", ["Targeted Stress", "Targeted Power", "Memory Bandwidth"])],
}


def _deployment(model):
    tests = []
    bad = [i for i in model.gpu_indexes() if model.ecc(i)["uncorrected"]]
    for name in _DEPLOYMENT:
        result = {"status": "Pass"}
        if name == "Page Retirement/Row Remap" and bad:
            result = {"status": "Fail", "gpu_ids": ",".join(str(i) for i in bad),
                      "warnings": ["GPU %d had uncorrectable memory errors and row remapping is pending. "
                                   "Reset the GPU or reboot the node." % i for i in bad]}
        tests.append({"name": name, "results": [result]})
    return {"category": "Deployment", "tests": tests}


def _per_gpu(model, category, names):
    tests = []
    for name in names:
        results = [{"gpu_ids": str(i), "status": "Pass"} for i in model.gpu_indexes()]
        tests.append({"name": name, "results": results})
    return {"category": category, "tests": tests}


def main(model, argv):
    if argv[:1] != ["diag"]:
        sys.stderr.write("hwsim dcgmi: only 'diag -r <level> -j' is simulated\n")
        return 2
    level = 1
    if "-r" in argv:
        try:
            level = int(argv[argv.index("-r") + 1])
        except (IndexError, ValueError):
            sys.stderr.write("Error: invalid run level\n")
            return 2
    if "-j" not in argv:
        sys.stderr.write("hwsim dcgmi: only JSON output (-j) is simulated\n")
        return 2
    categories = [_deployment(model)]
    for category, names in _LEVEL_TESTS.get(min(level, 3), []):
        categories.append(_per_gpu(model, category, names))
    doc = {"DCGM GPU Diagnostic": {"test_categories": categories},
           "Driver Version Detected": model.gpus["driver_version"],
           "GPU Device IDs": ["2330"] * len(model.gpu_indexes()),
           "version": "3.3.5"}
    print(json.dumps(doc, indent=4))
    failed = any(r.get("status") == "Fail" for c in categories for t in c["tests"] for r in t["results"])
    return 226 if failed else 0
