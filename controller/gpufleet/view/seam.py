"""The seam, measured: owned GPU-hours per pool split into busy, schedulable idle and the
states that are paid for but not schedulable, with those causes ranked.

``seam(inputs, start, end, buckets)`` is pure: it reads the pools, the ledger transitions and
the Slurm samples in ``inputs`` and returns plain dicts (hours are GPU-hours, floats).
"""
from gpufleet.view.categories import CATEGORIES, LAYER_OF, LAYERS, SCHEDULABLE
from gpufleet.view.timeline import node_intervals

__all__ = ["seam", "by_node"]


def by_node(items):
    """{node: [items of that node in order]} for transitions or samples."""
    out = {}
    for item in items:
        out.setdefault(item.node, []).append(item)
    return out


def _empty():
    return dict((c, 0.0) for c in CATEGORIES)


def _summary(hours, nodes, gpus):
    owned = sum(hours.values())
    schedulable = sum(hours[c] for c in SCHEDULABLE)
    causes = sorted(((c, h) for c, h in hours.items() if c not in SCHEDULABLE and h > 0),
                    key=lambda pair: (-pair[1], CATEGORIES.index(pair[0])))
    layers = dict((layer, 0.0) for layer in LAYERS)
    for category, value in hours.items():
        layers[LAYER_OF[category]] += value
    return {"nodes": nodes, "gpus": gpus, "owned_gpu_hours": owned, "by_category": hours,
            "by_layer": layers, "schedulable_gpu_hours": schedulable,
            "busy_gpu_hours": hours["busy"],
            "paid_not_schedulable_gpu_hours": owned - schedulable,
            "causes": [{"category": c, "layer": LAYER_OF[c], "gpu_hours": h} for c, h in causes]}


def _bucket_edges(start, end, buckets):
    step = (end - start) / buckets
    return [start + i * step for i in range(buckets)] + [end]


def _add_series(series, edges, category, t0, t1, gpus):
    for index in range(len(edges) - 1):
        lo, hi = max(t0, edges[index]), min(t1, edges[index + 1])
        if hi > lo:
            series[index]["by_category"][category] += (hi - lo) / 3600.0 * gpus


def seam(inputs, start, end, buckets=0):
    """Per pool and in total: GPU-hours by category and layer over [start, end).

    With ``buckets`` > 0, ``series`` splits the whole fleet's hours into that many equal
    time buckets (the fleet page's chart).
    """
    if end <= start:
        raise ValueError("The seam period is empty: start %s is not before end %s. Pass a "
                         "later --until or an earlier --since." % (start, end))
    transitions, samples = by_node(inputs.transitions), by_node(inputs.samples)
    edges = _bucket_edges(start, end, buckets) if buckets else []
    series = [{"start": edges[i], "end": edges[i + 1], "by_category": _empty()}
              for i in range(len(edges) - 1)]
    pools, total = {}, _empty()
    nodes_total = gpus_total = 0
    for pool in inputs.pools:
        hours = _empty()
        for node in pool.members:
            for category, t0, t1 in node_intervals(transitions.get(node, ()), samples.get(node, ()),
                                                   start, end):
                hours[category] += (t1 - t0) / 3600.0 * pool.gpus_per_node
                _add_series(series, edges, category, t0, t1, pool.gpus_per_node)
        for category, value in hours.items():
            total[category] += value
        gpus = len(pool.members) * pool.gpus_per_node
        nodes_total += len(pool.members)
        gpus_total += gpus
        pools[pool.name] = _summary(hours, len(pool.members), gpus)
    return {"period": {"start": start, "end": end, "hours": (end - start) / 3600.0},
            "pools": pools, "total": _summary(total, nodes_total, gpus_total), "series": series}
