# -*- coding: utf-8 -*-
# Part of the gpufleet controller package (controller/gpufleet); never shipped in the collection.
"""Driver / CUDA / NCCL / DCGM compatibility rules for production pin files.

The minimum driver per CUDA release is the Linux x86_64 driver that NVIDIA ships with
that toolkit (CUDA Toolkit release notes, "CUDA Toolkit and Corresponding Driver
Versions"). We require it rather than the looser minor-version-compatibility floor
because a golden image must run every toolkit feature, not only the compatible subset.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

__all__ = ["MIN_DRIVER_FOR_CUDA", "check_stack", "parse_dotted"]

# (CUDA major, minor, update) -> minimum Linux x86_64 driver, from the release notes.
MIN_DRIVER_FOR_CUDA = {
    (12, 4, 0): "550.54.14",
    (12, 4, 1): "550.54.15",
    (12, 5, 0): "555.42.02",
    (12, 6, 0): "560.28.03",
    (12, 8, 0): "570.86.10",
    (12, 8, 1): "570.124.06",
    (12, 9, 0): "575.51.03",
    (12, 9, 1): "575.57.08",
    (13, 0, 0): "580.65.06",
    (13, 0, 1): "580.82.07",
}


def parse_dotted(text):
    """'570.148.08' -> (570, 148, 8); None when it is not a dotted number."""
    if not re.match(r"^\d+(\.\d+)*$", text or ""):
        return None
    return tuple(int(part) for part in text.split("."))


def _cuda_key(cuda_version):
    parts = parse_dotted(cuda_version)
    if parts is None or len(parts) < 2:
        return None
    return (parts[0], parts[1], parts[2] if len(parts) > 2 else 0)


def _driver_problems(driver, cuda):
    key = _cuda_key(cuda)
    if key is None:
        return ['cuda version "%s" is not MAJOR.MINOR[.UPDATE]' % cuda]
    if key not in MIN_DRIVER_FOR_CUDA:
        known = ", ".join("%d.%d.%d" % k for k in sorted(MIN_DRIVER_FOR_CUDA))
        return ["cuda %s is not in the compatibility table (known: %s); add its minimum driver "
                "to compat.MIN_DRIVER_FOR_CUDA from the CUDA release notes" % (cuda, known)]
    needed = MIN_DRIVER_FOR_CUDA[key]
    have = parse_dotted(driver)
    if have is None:
        return ['gpu_driver version "%s" is not a dotted driver version like 570.148.08' % driver]
    if have < parse_dotted(needed):
        return ["gpu_driver %s is older than %s, the minimum driver of CUDA %s; pin a newer "
                "driver or an older CUDA" % (driver, needed, cuda)]
    return []


def _suffix_problems(components, cuda_major_minor):
    problems = []
    for name, version in sorted(components.get("nccl", {}).get("packages", {}).items()):
        match = re.search(r"\+cuda(\d+)\.(\d+)$", version)
        if not match:
            problems.append('nccl package %s=%s has no "+cudaX.Y" suffix' % (name, version))
        elif (int(match.group(1)), int(match.group(2))) > cuda_major_minor or int(match.group(1)) != cuda_major_minor[0]:
            problems.append("nccl package %s=%s is built for CUDA %s.%s but the image pins CUDA %d.%d"
                            % (name, version, match.group(1), match.group(2), cuda_major_minor[0], cuda_major_minor[1]))
    for name in sorted(components.get("dcgm", {}).get("packages", {})):
        match = re.search(r"-cuda(\d+)$", name)
        if match and int(match.group(1)) != cuda_major_minor[0]:
            problems.append("dcgm package %s targets CUDA %s but the image pins CUDA %d"
                            % (name, match.group(1), cuda_major_minor[0]))
    return problems


def _branch_problems(components, driver):
    problems = []
    branch = driver.split(".")[0]
    for comp in ("gpu_driver", "fabric_manager"):
        for name in sorted(components.get(comp, {}).get("packages", {})):
            match = re.search(r"-(\d{3})(-open|-server)?$", name)
            if match and match.group(1) != branch:
                problems.append("%s package %s is from driver branch %s but gpu_driver is %s"
                                % (comp, name, match.group(1), driver))
    return problems


def check_stack(components):
    """Return a list of incompatibility messages (empty when the GPU stack fits together)."""
    if "gpu_driver" not in components or "cuda" not in components:
        return []
    driver = str(components["gpu_driver"].get("version", ""))
    cuda = str(components["cuda"].get("version", ""))
    problems = _driver_problems(driver, cuda)
    key = _cuda_key(cuda)
    if key is not None:
        problems.extend(_suffix_problems(components, key[:2]))
    problems.extend(_branch_problems(components, driver))
    return problems
