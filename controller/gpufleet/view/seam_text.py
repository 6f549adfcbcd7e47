"""The seam as a plain-text table (``gpufleet seam``)."""
from gpufleet.view.answer import duration
from gpufleet.view.categories import CATEGORIES, LAYER_OF

__all__ = ["render_seam"]


def _pool_lines(name, pool):
    owned = pool["owned_gpu_hours"]
    lines = ["pool %s: %d nodes, %d GPUs, %.1f GPU-hours owned; %.1f schedulable (%.1f busy), "
             "%.1f paid but not schedulable" % (name, pool["nodes"], pool["gpus"], owned,
                                                 pool["schedulable_gpu_hours"], pool["busy_gpu_hours"],
                                                 pool["paid_not_schedulable_gpu_hours"])]
    for category in CATEGORIES:
        hours = pool["by_category"][category]
        if hours:
            lines.append("  %-13s %-3s %9.2f GPU-h  %5.1f%%" % (
                category, LAYER_OF[category], hours, 100.0 * hours / owned if owned else 0.0))
    if pool["causes"]:
        lines.append("  paid but not schedulable, by cause: " + ", ".join(
            "%s %.1f" % (c["category"], c["gpu_hours"]) for c in pool["causes"]))
    return lines


def render_seam(result, bringups=None):
    period = result["period"]
    lines = ["seam over %.2f h" % period["hours"]]
    for name, pool in sorted(result["pools"].items()):
        lines += _pool_lines(name, pool)
    if len(result["pools"]) > 1:
        lines += _pool_lines("(all)", result["total"])
    for node, items in sorted((bringups or {}).items()):
        for item in items:
            lines.append("time to schedulable %s (%s): %s = %s" % (
                node, item["kind"], duration(item["seconds"]),
                " + ".join("%s %s" % (s, duration(t)) for s, t in item["steps"])))
    return "\n".join(lines) + "\n"
