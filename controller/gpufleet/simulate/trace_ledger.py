"""The controller's recorded demand (ledger table ``demand_history``) as a trace.

Read with sqlite3 directly, read-only: the ledger's ``demand_history()`` API (helper
"ledger", issue 13) is not on main yet; the table is ``demand_history(pool, minute,
gpus_running, gpus_pending, gpus_pending_capacity)`` with ``minute`` in epoch seconds.
Demand = running + pending GPUs, all single-node (the table does not record job shapes).
"""
import sqlite3

from gpufleet.simulate.errors import TraceError
from gpufleet.simulate.trace import build

__all__ = ["read"]

QUERY = ("SELECT pool, minute, gpus_running, gpus_pending FROM demand_history "
         "WHERE pool = ? ORDER BY minute")


def _pools(conn, path):
    try:
        return [r[0] for r in conn.execute("SELECT DISTINCT pool FROM demand_history ORDER BY pool")]
    except sqlite3.DatabaseError as exc:
        raise TraceError("%s: no readable demand_history table (%s). Give a controller ledger that recorded "
                         "demand (gpufleet controller run), or a CSV trace." % (path, exc)) from None


def read(path, pool=None):
    try:
        conn = sqlite3.connect("file:%s?mode=ro" % path, uri=True)
    except sqlite3.Error as exc:
        raise TraceError("Cannot open ledger %s: %s." % (path, exc)) from None
    try:
        pools = _pools(conn, path)
        if pool is None:
            if len(pools) != 1:
                raise TraceError("%s: demand_history holds pools %s; name one with --pool."
                                 % (path, ", ".join(pools) or "(none)"))
            pool = pools[0]
        elif pool not in pools:
            raise TraceError("%s: pool %r has no demand_history rows (pools: %s). Fix --pool."
                             % (path, pool, ", ".join(pools) or "(none)"))
        rows = []
        for index, (_, minute, running, pending) in enumerate(conn.execute(QUERY, (pool,)), start=1):
            where = "%s demand_history pool %s row %d (minute %s)" % (path, pool, index, minute)
            for name, value in (("gpus_running", running), ("gpus_pending", pending)):
                if not isinstance(value, int) or value < 0:
                    raise TraceError("%s: %s is %r, not a whole number >= 0. Repair the row." % (where, name, value))
            if not isinstance(minute, (int, float)):
                raise TraceError("%s: minute is %r, not epoch seconds. Repair the row." % (where, minute))
            rows.append((float(minute), 0, running + pending, where))
    finally:
        conn.close()
    return build(path, "ledger", rows)
