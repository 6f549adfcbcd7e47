"""The fleet page as one self-contained HTML file: inline SVG chart, no script, nothing fetched."""
import html

from gpufleet.report.render import html_table, when
from gpufleet.view.answer import duration
from gpufleet.view.categories import CATEGORIES, LAYER_NAMES, LAYER_OF

__all__ = ["render_fleet_html", "CATEGORY_COLOURS"]

CATEGORY_COLOURS = {
    "busy": "#238b45", "idle": "#a1d99b", "slurm_down": "#fb6a4a", "unsampled": "#d9d9d9",
    "hot": "#fd8d3c", "warm": "#fdd0a2", "cold": "#9ecae1", "provisioning": "#4292c6",
    "draining": "#bcbddc", "failed": "#de2d26", "break_fix": "#756bb1", "not_enrolled": "#636363",
}


def _svg_seam(series, width=1100, height=320):
    """Stacked bars: one per time bucket, one segment per category (GPU-hours)."""
    if not series:
        return "<p>No period to chart.</p>"
    top = max(sum(b["by_category"].values()) for b in series) or 1.0
    left, plot_h, gap = 60, height - 50, 2
    bar_w = (width - left - 10) / len(series)
    parts = ['<svg xmlns="http://www.w3.org/2000/svg" id="seam-chart" width="%d" height="%d" role="img" '
             'aria-label="GPU-hours by layer and state over time">' % (width, height)]
    parts.append('<text x="0" y="12" font-size="11">%.1f GPU-h</text>' % top)
    parts.append('<text x="0" y="%d" font-size="11">0</text>' % (10 + plot_h))
    for index, bucket in enumerate(series):
        x, y = left + index * bar_w, 10 + plot_h
        for category in CATEGORIES:
            value = bucket["by_category"][category]
            if value <= 0:
                continue
            h = value / top * plot_h
            y -= h
            parts.append('<rect class="seam-seg" data-category="%s" x="%.1f" y="%.1f" width="%.1f" height="%.1f" '
                         'fill="%s"><title>%s %s: %.2f GPU-h (%s)</title></rect>'
                         % (category, x, y, max(bar_w - gap, 1), h, CATEGORY_COLOURS[category],
                            when(bucket["start"]), category, value, LAYER_OF[category]))
    parts.append('<text x="%d" y="%d" font-size="11">%s</text>' % (left, height - 8, when(series[0]["start"])))
    parts.append('<text x="%d" y="%d" font-size="11" text-anchor="end">%s</text>'
                 % (width - 10, height - 8, when(series[-1]["end"])))
    parts.append("</svg>")
    legend = " ".join('<span class="legend" style="background:%s;padding:0 6px;margin-right:4px">%s %s</span>'
                      % (CATEGORY_COLOURS[c], LAYER_OF[c], c) for c in CATEGORIES)
    return "\n".join(parts) + "<p>" + legend + "</p>"


def _seam_rows(seam):
    rows = []
    for name, pool in sorted(seam["pools"].items()) + [("(all pools)", seam["total"])]:
        causes = ", ".join("%s %.1f" % (c["category"], c["gpu_hours"]) for c in pool["causes"][:4])
        rows.append((name, pool["nodes"], "%.1f" % pool["owned_gpu_hours"], "%.1f" % pool["busy_gpu_hours"],
                     "%.1f" % pool["by_category"]["idle"], "%.1f" % pool["paid_not_schedulable_gpu_hours"],
                     causes or "-"))
    return rows


def _layer_rows(seam):
    total = seam["total"]
    return [(layer, LAYER_NAMES[layer], "%.1f" % hours) for layer, hours in sorted(total["by_layer"].items())]


def _start_rows(starts):
    return [(s["job"], s.get("pool") or "-", ",".join(s["nodes"]), duration(s["wait_seconds"]), s["state_at_submit"],
             ", ".join("%s %s" % (k, duration(v)) for k, v in s["steps"].items()))
            for s in starts]


def _ready_rows(ready):
    return [(r["node"], r["kind"], when(r["start"]), duration(r["seconds"]),
             " + ".join("%s %s" % (s, duration(t)) for s, t in r["steps"])) for r in ready]


def _why_rows(pending):
    return [(a["subject"], a["layer"] or "-", a["layer_name"] or "-", a["summary"], " | ".join(a["evidence"]))
            for a in pending]


def render_fleet_html(data):
    seam = data["seam"]
    period = seam["period"]
    body = ["<h1>gpufleet fleet</h1>",
            "<p>Generated %s; period %s to %s (%.1f h).</p>" % (
                when(data["generated_at"]), when(period["start"]), when(period["end"]), period["hours"]),
            "<h2>The seam: GPU-hours by layer and state</h2>", _svg_seam(seam["series"]),
            html_table(["layer", "", "GPU-hours"], _layer_rows(seam)),
            "<h2>Per pool</h2>",
            html_table(["pool", "nodes", "owned GPU-h", "busy", "schedulable idle", "paid, not schedulable",
                        "top causes"], _seam_rows(seam)),
            '<h2 id="pending">Why each pending job waits</h2>',
            html_table(["job", "layer", "", "answer", "evidence"], _why_rows(data["pending"]))
            if data["pending"] else "<p>No pending jobs.</p>",
            "<h2>Job starts: submit to start, by step</h2>",
            html_table(["job", "pool", "nodes", "wait", "last node at submit", "steps"], _start_rows(data["job_starts"]))
            if data["job_starts"] else "<p>No started job with a start time.</p>",
            "<h2>Time to schedulable per node</h2>",
            html_table(["node", "kind", "started", "to joined", "steps"], _ready_rows(data["time_to_schedulable"]))
            if data["time_to_schedulable"] else "<p>No node became schedulable in the period.</p>"]
    style = ("body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;margin-bottom:1em}"
             "td,th{border:1px solid #ccc;padding:2px 6px;font-size:13px;vertical-align:top}th{background:#eee}")
    return ("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>gpufleet fleet</title><style>%s</style>"
            "</head><body>\n%s\n</body></html>\n" % (style, "\n".join(body)))
