"""The controller's learned forecasters: fitted from the ledger's demand history outside the pass.

For each pool with an enabled ``forecast.method: learned``, ``Models.forecasters`` hands the
pass {pool: fitted LearnedForecaster, or learned.Unfitted(why)}; ``plan()`` only predicts. A fit
starts when a pool has none, and again once the fitted model is older than
``forecast.refit_interval`` (a failed fit is retried after the shorter of that and an hour). A
fit reads the demand history before the pass's ``now`` and runs in a background thread (one
takes seconds on weeks of per-minute history: docs/benchmarks.md), so the pass never waits: the
previous model is used until the new one is ready. Until a pool has a model (first fit running,
too little history, scikit-learn missing) it is Unfitted with the reason, and the planner
forecasts as ``forecast.fallback`` says. Each change of a pool's state is said once in the log.
"""
import threading
import time

from gpufleet.capacity import learned

__all__ = ["Models", "RETRY_S"]

RETRY_S = 3600.0     # a failed fit (too little history yet) is tried again at most this often


class _Pool:
    def __init__(self):
        self.model, self.fitted_at = None, None     # the model in use and the pass time its fit began
        self.failed, self.failed_at = None, None    # the last fit's error, when it failed
        self.running = None                         # the thread of a fit under way
        self.said = None
        self.note = None                            # the last thing said about it (notes())


class Models:
    """Fitted learned models by pool. ``fit``: learned.fit's signature (tests pass a fake);
    ``background``: False fits in the calling thread (tests)."""

    def __init__(self, fit=learned.fit, clock=time.time, background=True, say=None):
        self._fit, self.clock, self.background = fit, clock, background
        self._say = say if say is not None else (lambda *_a, **_k: None)
        self._lock = threading.Lock()
        self._pools = {}

    def forecasters(self, policy, history, now=None):
        """{pool: LearnedForecaster or learned.Unfitted} for the pools with an enabled learned
        forecast; starts the fits that are due. ``history``: {pool: DemandSamples by minute}."""
        now = self.clock() if now is None else now
        out = {}
        for name, pool in policy.pools.items():
            settings = pool.forecast
            if not (settings.enabled and settings.method == "learned"):
                continue
            state = self._pools.setdefault(name, _Pool())
            if self._due(state, settings, now):
                self._start(name, state, tuple(history.get(name, ())), settings, now)
            out[name] = self._current(name, state, settings)
        return out

    def notes(self):
        """{pool: what was last said of its model}: ``controller status`` shows these."""
        return {name: s.note for name, s in sorted(self._pools.items()) if s.note}

    def wait(self, timeout=None):
        """Wait for the fits under way (tests; a stopping controller need not)."""
        for state in list(self._pools.values()):
            thread = state.running
            if thread is not None:
                thread.join(timeout)

    def _due(self, state, settings, now):
        with self._lock:
            if state.running is not None:
                return False
            if state.failed_at is not None and (state.model is None or state.failed_at > state.fitted_at):
                return now - state.failed_at >= min(settings.refit_interval, RETRY_S)
            return state.model is None or now - state.fitted_at >= settings.refit_interval

    def _start(self, name, state, samples, settings, now):
        def work():
            try:
                model, error = self._fit(samples, settings, now), None
            except learned.LearnError as exc:
                model, error = None, str(exc)
            except Exception as exc:    # noqa: BLE001 - a broken fit must not end the thread unsaid
                model, error = None, "forecast.method: learned fit failed: %s: %s" % (type(exc).__name__, exc)
            with self._lock:
                if model is not None:
                    state.model, state.fitted_at, state.failed, state.failed_at = model, now, None, None
                else:
                    state.failed, state.failed_at = error, now
                state.running = None

        if not self.background:
            state.running = True
            work()
            return
        thread = threading.Thread(target=work, name="gpufleet-learn-%s" % name, daemon=True)
        with self._lock:
            state.running = thread
        thread.start()

    def _current(self, name, state, settings):
        with self._lock:
            model, failed, running, fitted_at = state.model, state.failed, state.running, state.fitted_at
        if model is not None:
            said = ("fitted", fitted_at, failed)
            text = "pool %s: learned forecast model fitted on the demand before %s (%d training points)" % (
                name, _iso(fitted_at), model.points)
            if failed:
                text += "; the last refit failed (%s), this model is kept" % failed
            result = model
        else:
            why = failed or ("learned model being fitted" if running else "no learned model fitted yet")
            said = ("unfitted", why)
            fallback = ("the seasonal forecast is used" if settings.fallback == "seasonal"
                        else "no forecast floor")
            text = "pool %s: %s; %s until it is (forecast.fallback: %s)" % (name, why, fallback, settings.fallback)
            result = learned.Unfitted(why)
        state.note = text
        if state.said != said:
            state.said = said
            self._say(text, "warning" if failed else "info", event="learned_model", pool=name)
        return result


def _iso(at):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(at))
