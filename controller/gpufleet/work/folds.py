"""The decision log as one pass reads it: once, far enough back for every book folded from it.

Each book looks back its own distance: gangs in progress (gpufleet.capacity.gangbook: gang
deadlines are hours), open day-2 repair cases (gpufleet.day2.cases: a case older than this whose
node never came back is left to a person, docs/day2.md) and replacements awaiting their bind
(gpufleet.day2.bindings). The rollout book reads from the oldest unfinished rollout's start when
that is older (gpufleet.controller.loop, Reconciler.observe).
"""
from gpufleet.work import codec

__all__ = ["GANG_LOOKBACK_S", "DAY2_LOOKBACK_S", "LOOKBACK_S", "within", "gang_actions", "per_node"]

GANG_LOOKBACK_S = 2 * 86400
DAY2_LOOKBACK_S = 7 * 86400
LOOKBACK_S = max(GANG_LOOKBACK_S, DAY2_LOOKBACK_S)   # one read serves every book


def within(decisions, now, lookback_s):
    """The decisions (oldest first) recorded ``lookback_s`` or less before ``now``."""
    return [d for d in decisions if d["at"] >= now - lookback_s]


def gang_actions(decisions):
    """The decisions of a gang, as Actions for the planner's gang book (gangbook.fold).

    An admit ends its gang only once it succeeded: while it runs (or after it failed) the gang
    stays in progress, so its job is not given a second gang meanwhile. The controller's loop
    and the fleet view read gangs through this one rule."""
    return [codec.decode(d) for d in decisions if codec.extra_of(d).get("gang_id")
            and (d["action"] != "admit" or d["outcome"] == "ok")]


def per_node(decisions, opened, step):
    """The walk the repair case book and the rollout book share: per node, oldest first,
    ``opened(decision, node)`` starts its item (None: the opening step is older than the
    look-back, not ours now), ``step(item, decision)`` moves it, None closes it. -> {node: item}"""
    items = {}
    for decision in decisions:
        for node in decision.get("nodes") or ():
            current = items.get(node)
            current = opened(decision, node) if current is None else current
            after = None if current is None else step(current, decision)
            if after is None:
                items.pop(node, None)
            else:
                items[node] = after
    return items
