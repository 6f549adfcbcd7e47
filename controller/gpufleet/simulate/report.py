"""Results as text (one row per policy or sweep point), JSON and the trade-off summary."""
import json

__all__ = ["table", "node_table", "tradeoff_table", "write_json", "idle_cost"]

COLUMNS = (
    ("policy", "{}"), ("shortfall GPU-min", "{:.1f}"), ("episodes", "{}"), ("wait p50 s", "{}"),
    ("wait p95 s", "{}"), ("idle GPU-h", "{:.1f}"), ("hot GPU-h", "{:.1f}"), ("prov GPU-h", "{:.1f}"),
    ("off node-h", "{:.1f}"), ("cycles/node/day", "{:.3f}"), ("partial", "{}"), ("refused", "{}"),
)


def idle_cost(metrics):
    """Idle-but-powered GPU-hours, all tiers together: the cost axis of the trade-off."""
    return round(sum(metrics["idle_powered_gpu_hours"].values()), 3)


def _cells(name, m):
    idle = m["idle_powered_gpu_hours"]
    wait = lambda v: "-" if v is None else "%.0f" % v  # noqa: E731
    values = (name, m["shortfall_gpu_minutes"], m["shortfall_episodes"], wait(m["added_wait_p50_s"]),
              wait(m["added_wait_p95_s"]), idle["idle"], idle["hot"], idle["provisioning"],
              m["powered_off_node_hours"], m["power_cycles_per_node_day"], m["partial_starts"],
              sum(m["refused_actions"].values()))
    return [fmt.format(v) for (_, fmt), v in zip(COLUMNS, values)]


def _render(header, rows):
    widths = [max(len(str(c)) for c in col) for col in zip(header, *rows)]
    line = lambda cells: "  ".join(str(c).rjust(w) if i else str(c).ljust(w) for i, (c, w) in enumerate(zip(cells, widths)))  # noqa: E731
    return "\n".join([line(header), line(["-" * w for w in widths])] + [line(r) for r in rows])


def table(runs):
    """``runs``: [{"name", "metrics"}] -> the text table."""
    return _render([c for c, _ in COLUMNS], [_cells(run["name"], run["metrics"]) for run in runs])


NODE_COLUMNS = ("policy", "powered-off nodes mean", "powered-off %", "shortfall node-intervals",
                "intervals short", "powered-count changes/day", "power changes/day")


def node_table(runs):
    """The figures in nodes the published baselines report, one row per run."""
    rows = []
    for run in runs:
        m = run["metrics"]
        fraction = m["powered_off_fraction"]
        rows.append([run["name"], "%.1f" % m["powered_off_nodes_mean"],
                     "-" if fraction is None else "%.1f" % (100 * fraction), m["shortfall_node_intervals"],
                     m["shortfall_intervals"], "%.2f" % m["powered_count_change_intervals_per_day"],
                     "%.1f" % m["power_changes_per_day"]])
    return _render(list(NODE_COLUMNS), rows)


def tradeoff_table(field, targets):
    """``targets``: [{"target", "value", "shortfall", "idle_cost"}] from compare.tradeoff."""
    rows = [["<= %.1f" % t["target"], "-" if t["value"] is None else "%g" % t["value"],
             "-" if t["shortfall"] is None else "%.1f" % t["shortfall"],
             "-" if t["idle_cost"] is None else "%.1f" % t["idle_cost"]] for t in targets]
    return _render(["shortfall target GPU-min", "smallest " + field, "shortfall GPU-min", "idle-powered GPU-h"], rows)


def write_json(path, document):
    """``document`` as JSON at ``path``, written whole or not at all."""
    from gpufleet.simulate.output import write_atomically

    def write(temporary):
        with open(temporary, "x", encoding="utf-8") as handle:
            json.dump(document, handle, indent=1, sort_keys=True)
            handle.write("\n")

    write_atomically(path, write, "--json-file")
