"""The PNG: demand and supply by tier over time, shortfall per policy, per 10-minute interval the
powered-off nodes, node shortfall and power-state changes per policy (their totals in the legend),
the trade-off curve.

matplotlib with the Agg backend (no display on a controller host).
"""
from datetime import datetime, timezone

__all__ = ["plot"]

STACK = (("busy", "busy"), ("idle", "idle (joined)"), ("hot", "hot"), ("provisioning", "provisioning"))


def _dates(times):
    return [datetime.fromtimestamp(t, timezone.utc) for t in times]


def plot(path, runs, gpus_per_node, sweep=None, title="", footnote=""):
    """``runs``: [{"name", "metrics", "series"}]; ``sweep``: {"field", "points": [{"value", "metrics"}]}.
    The PNG is written whole or not at all (gpufleet.simulate.output)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(4, 1, figsize=(13, 16), constrained_layout=True)
    first = runs[0]
    series = first["series"]
    dates = _dates(series["time"])
    stacks = [[count * gpus_per_node for count in series[key]] for key, _ in STACK]
    axes[0].stackplot(dates, *stacks, labels=[label for _, label in STACK], step="post", alpha=0.7)
    axes[0].step(dates, series["demand"], where="post", color="black", linewidth=0.7, label="demand (GPUs)")
    axes[0].set_ylabel("GPUs")
    axes[0].set_title("%s: demand and powered supply by tier (%s)" % (title, first["name"]))
    axes[0].legend(loc="upper left", fontsize="small", ncol=5)
    for run in runs:
        axes[1].step(_dates(run["series"]["time"]), run["series"]["shortfall"], where="post", linewidth=0.8,
                     label="%s (%.0f GPU-min)" % (run["name"], run["metrics"]["shortfall_gpu_minutes"]))
    axes[1].set_ylabel("GPUs waiting for capacity to be ready")
    axes[1].set_title("Shortfall over time")
    axes[1].legend(loc="upper left", fontsize="small")
    _intervals(axes[2], runs)
    _tradeoff(axes[3], runs, sweep)
    if footnote:
        fig.suptitle(footnote, fontsize="x-small")
    from gpufleet.simulate.output import write_atomically
    try:
        write_atomically(path, lambda temporary: fig.savefig(temporary, dpi=110, format="png"), "--plot")
    finally:
        plt.close(fig)
    return path


def _intervals(ax, runs):
    """Per 10-minute interval and policy: mean powered-off nodes, node-minutes short, power changes."""
    for run in runs:
        rows, m = run.get("intervals"), run["metrics"]
        if not rows or not rows["start"]:
            continue
        dates = _dates(rows["start"])
        line = ax.step(dates, rows["powered_off_nodes_mean"], where="post", linewidth=0.8,
                       label="%s: powered off (mean %.1f nodes), used rate %s, idle-powered %.0f node-h"
                       % (run["name"], m["powered_off_nodes_mean"],
                          "-" if m["powered_used_rate"] is None else "%.0f %%" % (100 * m["powered_used_rate"]),
                          m["idle_powered_node_hours"]))[0]
        ax.step(dates, rows["shortfall_node_minutes"], where="post", linewidth=0.8, linestyle="--",
                color=line.get_color(), label="%s: short node-min (%.0f; %d node-intervals in %d intervals)"
                % (run["name"], m["shortfall_node_minutes"], m["shortfall_node_intervals"], m["shortfall_intervals"]))
        ax.step(dates, rows["power_changes"], where="post", linewidth=0.6, linestyle=":", color=line.get_color(),
                label="%s: power changes (%.1f/day; %d wakes within 60 s of a park)"
                % (run["name"], m["power_changes_per_day"], m["wakes_within_60s_of_park"]))
    ax.set_ylabel("per 10-minute interval")
    ax.set_title("Powered-off nodes (solid), node-minutes short (dashed), power-state changes (dotted)")
    ax.legend(loc="upper left", fontsize="x-small")


def _tradeoff(ax, runs, sweep):
    from gpufleet.simulate.report import idle_cost

    if sweep and sweep["points"]:
        xs = [idle_cost(p["metrics"]) for p in sweep["points"]]
        ys = [p["metrics"]["shortfall_gpu_minutes"] for p in sweep["points"]]
        ax.plot(xs, ys, marker="o", label="sweep of %s" % sweep["field"])
        for p, x, y in zip(sweep["points"], xs, ys):
            ax.annotate("%g" % p["value"], (x, y), textcoords="offset points", xytext=(4, 4), fontsize="x-small")
    for run in runs:
        ax.scatter([idle_cost(run["metrics"])], [run["metrics"]["shortfall_gpu_minutes"]], marker="s", label=run["name"])
    ax.set_xlabel("idle-but-powered GPU-hours (idle + hot + provisioning): the cost of warmth")
    ax.set_ylabel("shortfall GPU-minutes")
    ax.set_title("Trade-off: warmth cost against shortfall")
    ax.grid(True, alpha=0.3)
    ax.legend(loc="upper right", fontsize="small")
