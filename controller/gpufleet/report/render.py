"""Markdown and self-contained HTML (inline SVG timeline) renderings of the report."""
import datetime
import html
import os

from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle import states

__all__ = ["render_markdown", "render_html", "write_report", "STATE_COLOURS", "html_table", "when"]

STATE_COLOURS = {
    states.ENROLLED: "#c7c7c7", states.INSPECTED: "#9ecae1", states.IMAGING: "#6baed6",
    states.CONFIGURING: "#4292c6", states.VALIDATING: "#fdae6b", states.READY: "#74c476",
    states.JOINED: "#238b45", states.FAILED: "#de2d26", states.DRAINING: "#fdd0a2",
    states.RECYCLING: "#bcbddc", states.BREAK_FIX: "#756bb1", states.DECOMMISSIONED: "#636363",
    states.HOT: "#fd8d3c", states.PARKED: "#fdd0a2", states.WAKING: "#fdae6b",
}


def when(epoch):
    return datetime.datetime.fromtimestamp(epoch, tz=datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def _num(value):
    if isinstance(value, float):
        return "%.4g" % value
    if isinstance(value, dict):
        return ", ".join("%s %s" % (k, _num(v)) for k, v in sorted(value.items()))
    if isinstance(value, list):
        return ", ".join(_num(v) for v in value)
    return "-" if value is None else str(value)


def _md_escape(text):
    return str(text).replace("|", "\\|").replace("\n", " ")


def _summary_rows(data):
    for node in data["nodes"]:
        yield (node["node"], node["state"], node.get("image_version") or "-", node.get("gate_verdict") or "-",
               node.get("gate_report_id") or "-", node.get("reason") or "")


def render_markdown(data):
    lines = ["# gpufleet bring-up report", "",
             "Generated %s from ledger `%s`%s." % (when(data["generated_at"]), data["ledger"],
                                                    " for run `%s`" % data["run_id"] if data.get("run_id") else "")]
    gang = data.get("gang")
    if gang:
        lines += ["", "Gang `%s`: **%s** (%d x %s, deadline %s)%s" % (
            gang["gang_id"], gang["status"], gang["size"], gang["sku"], gang["deadline"],
            " - " + gang["reason"] if gang.get("reason") else "")]
    lines += ["", "| node | state | image | gate | gate report | last reason |", "|---|---|---|---|---|---|"]
    lines += ["| %s |" % " | ".join(_md_escape(c) for c in row) for row in _summary_rows(data)]
    for node in data["nodes"]:
        if not node["checks"]:
            continue
        lines += ["", "## %s gate checks (%s)" % (node["node"], node.get("gate_profile") or "profile ?"), "",
                  "| phase | check | verdict | measured | threshold | unit |", "|---|---|---|---|---|---|"]
        for c in node["checks"]:
            lines.append("| %s |" % " | ".join(_md_escape(x) for x in (
                c["phase"], c["name"], (c["verdict"] or "").upper(), _num(c["measured"]), _num(c["threshold"]), c["unit"])))
    lines += ["", "## Timeline", "", "| node | state | from | seconds | why |", "|---|---|---|---|---|"]
    for node in data["nodes"]:
        for seg in node["timeline"]:
            lines.append("| %s | %s | %s | %.1f | %s |" % (node["node"], seg["state"], when(seg["start"]),
                                                          seg["stop"] - seg["start"], _md_escape(seg["why"])))
    return "\n".join(lines) + "\n"


def _svg_timeline(data, width=900, row=22):
    nodes = [n for n in data["nodes"] if n["timeline"]]
    if not nodes:
        return "<p>No transitions recorded.</p>"
    start = min(n["timeline"][0]["start"] for n in nodes)
    stop = max(max(s["stop"] for s in n["timeline"]) for n in nodes)
    span = max(stop - start, 1.0)
    left, plot = 110, width - 120
    parts = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" role="img" '
             'aria-label="bring-up timeline per node">' % (width, row * len(nodes) + 40)]
    for index, node in enumerate(nodes):
        y = 10 + index * row
        parts.append('<text x="0" y="%d" font-size="12">%s</text>' % (y + 13, html.escape(node["node"])))
        for seg in node["timeline"]:
            x = left + (seg["start"] - start) / span * plot
            w = max((seg["stop"] - seg["start"]) / span * plot, 1.0)
            parts.append('<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="%s"><title>%s: %s (%.1f s) %s</title></rect>'
                         % (x, y, w, row - 6, STATE_COLOURS.get(seg["state"], "#999"), html.escape(node["node"]),
                            seg["state"], seg["stop"] - seg["start"], html.escape(seg["why"])))
    axis_y = 10 + len(nodes) * row + 14
    parts.append('<text x="%d" y="%d" font-size="11">0 s</text>' % (left, axis_y))
    parts.append('<text x="%d" y="%d" font-size="11" text-anchor="end">%.0f s</text>' % (left + plot, axis_y, span))
    parts.append("</svg>")
    legend = " ".join('<span style="background:%s;padding:0 6px;margin-right:4px">%s</span>' % (c, s)
                      for s, c in STATE_COLOURS.items())
    return "\n".join(parts) + "<p>" + legend + "</p>"


def html_table(headers, rows):
    out = ["<table><tr>" + "".join("<th>%s</th>" % html.escape(h) for h in headers) + "</tr>"]
    for row in rows:
        out.append("<tr>" + "".join("<td>%s</td>" % html.escape(str(c)) for c in row) + "</tr>")
    return "\n".join(out + ["</table>"])


def render_html(data):
    gang = data.get("gang")
    body = ["<h1>gpufleet bring-up report</h1>",
            "<p>Generated %s from ledger <code>%s</code>%s.</p>" % (
                when(data["generated_at"]), html.escape(data["ledger"]),
                " for run <code>%s</code>" % html.escape(data["run_id"]) if data.get("run_id") else "")]
    if gang:
        body.append("<p>Gang <code>%s</code>: <b>%s</b> (%d x %s, deadline %s) %s</p>" % (
            html.escape(gang["gang_id"]), html.escape(gang["status"]), gang["size"], html.escape(gang["sku"]),
            gang["deadline"], html.escape(gang.get("reason") or "")))
    body += ["<h2>Nodes</h2>", html_table(["node", "state", "image", "gate", "gate report", "last reason"],
                                           list(_summary_rows(data))),
             "<h2>Bring-up timeline</h2>", _svg_timeline(data)]
    for node in data["nodes"]:
        if node["checks"]:
            body += ["<h2>%s gate checks</h2>" % html.escape(node["node"]), html_table(
                ["phase", "check", "verdict", "measured", "threshold", "unit", "reason"],
                [(c["phase"], c["name"], (c["verdict"] or "").upper(), _num(c["measured"]), _num(c["threshold"]),
                  c["unit"], c["reason"]) for c in node["checks"]])]
    style = ("body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
             "td,th{border:1px solid #ccc;padding:2px 6px;font-size:13px}th{background:#eee}")
    return ("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>gpufleet report</title><style>%s</style>"
            "</head><body>\n%s\n</body></html>\n" % (style, "\n".join(body)))


def write_report(data, out_dir):
    """Write report.html and report.md into ``out_dir``; returns both paths."""
    os.makedirs(out_dir, exist_ok=True)
    paths = {"html": os.path.join(out_dir, "report.html"), "markdown": os.path.join(out_dir, "report.md")}
    with open(paths["html"], "w") as handle:
        handle.write(render_html(data))
    with open(paths["markdown"], "w") as handle:
        handle.write(render_markdown(data))
    return paths
