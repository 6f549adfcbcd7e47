"""The controller's recorded demand (the ledger's ``demand_history``) as a trace.

Read through the ledger's own API (``lifecycle.decisions.demand_history``) in check mode, so
nothing is written: a SQLite file or a ``postgresql://`` URL. Demand = running + pending GPUs,
single-node (the ledger does not record job shapes).
"""
from gpufleet.simulate.errors import TraceError
from gpufleet.simulate.trace_model import build

__all__ = ["read"]


def _rows(path):
    from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle.decisions import demand_history
    from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle.errors import LedgerError
    from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle.ledger import Ledger

    try:
        ledger = Ledger(path, dry_run=True)
    except LedgerError as exc:
        raise TraceError("Cannot read demand from ledger %s: %s" % (path, exc)) from None
    try:
        return demand_history(ledger)
    except LedgerError as exc:
        raise TraceError("Cannot read demand_history from ledger %s: %s" % (path, exc)) from None
    finally:
        ledger.close()


def _minute(value, where):
    """The row's minute as epoch seconds; build() checks its range."""
    try:
        return float(value)
    except (TypeError, ValueError, OverflowError):
        raise TraceError("%s: minute %r is not epoch seconds. Repair the row." % (where, value)) from None


def read(path, pool=None):
    rows = _rows(path)
    pools = sorted({row["pool"] for row in rows})
    if pool is None:
        if len(pools) != 1:
            raise TraceError("%s: demand_history holds pools %s; name one with --pool."
                             % (path, ", ".join(pools) or "(none)"))
        pool = pools[0]
    elif pool not in pools:
        raise TraceError("%s: pool %r has no demand_history rows (pools: %s). Fix --pool."
                         % (path, pool, ", ".join(pools) or "(none)"))
    samples = []
    for index, row in enumerate((r for r in rows if r["pool"] == pool), start=1):
        where = "%s demand_history pool %s row %d (minute %s)" % (path, pool, index, row["minute"])
        for name in ("gpus_running", "gpus_pending"):
            if isinstance(row[name], bool) or not isinstance(row[name], int) or row[name] < 0:
                raise TraceError("%s: %s is %r, not a whole number >= 0. Repair the row." % (where, name, row[name]))
        samples.append((_minute(row["minute"], where), 0, row["gpus_running"] + row["gpus_pending"], where))
    return build(path, "ledger", samples)
