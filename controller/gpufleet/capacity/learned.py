"""The learned forecaster (``forecast.method: learned``): gradient-boosted trees on lag features.

The target is the one the seasonal forecast estimates: the peak demand (GPUs running + pending)
over the lead time from a bucket boundary, learned as the change from the last sample before
it. The features at that boundary are read only from samples before it: the last sample, the
peak of the last bucket, the mean demand of each of the last ``LAGS`` buckets, rolling means over
the last 1 h, 6 h and 24 h, the mean and lead-time peak at the same time one day and one week
earlier, and the time of day and of week (sine and cosine, UTC). A missing window is NaN, which
the regressor handles natively.

``fit`` (scikit-learn's HistGradientBoostingRegressor) runs outside the planning pass, on the
history before a split, and never reads a sample at or after the split: a training point's
target window ends at or before it. The fitted ``LearnedForecaster`` is an input to ``plan()``;
its ``predict_gpus`` is deterministic and does no I/O.
"""
import math

from gpufleet.capacity.forecast import WEEK, window
from ansible_collections.gpufleet.baremetal.plugins.module_utils.errors import GpufleetError

__all__ = ["LearnedForecaster", "LearnError", "Unfitted", "features", "fit", "target", "INSTALL_HINT", "LAGS", "boundary"]

DAY = 86400.0
LAGS = 8
ROLLING_S = (3600.0, 6 * 3600.0, DAY)
MIN_POINTS = 48       # fewer training points than half a day of 15-minute buckets: nothing to learn
INSTALL_HINT = "pip install 'gpufleet[learn]'"


class LearnError(GpufleetError):
    """The learned forecaster cannot be fitted (scikit-learn missing, too little history): one
    message naming forecast.method and the fix, no traceback."""

    def __init__(self, message):
        super().__init__("forecast.method: " + message)


def _mean(samples, start, end):
    found = window(samples, start, end)
    return sum(s.gpus for s in found) / len(found) if found else math.nan


def _peak(samples, start, end):
    found = window(samples, start, end)
    return float(max(s.gpus for s in found)) if found else math.nan


def boundary(now, bucket):
    """The bucket boundary at or before ``now``: features and predictions are read there."""
    return math.floor(now / bucket) * bucket


def features(samples, at, bucket, lead):
    """The feature vector at bucket boundary ``at`` from samples strictly before it."""
    row = [last_value(samples, at), _peak(samples, at - bucket, at)]
    row += [_mean(samples, at - i * bucket, at - (i - 1) * bucket) for i in range(1, LAGS + 1)]
    row += [_mean(samples, at - span, at) for span in ROLLING_S]
    for back in (DAY, WEEK):
        row += [_mean(samples, at - back, at - back + bucket), _peak(samples, at - back, at - back + lead)]
    day = (at % DAY) / DAY
    week = ((at / DAY + 3) % 7) / 7          # epoch day 0 was a Thursday: 0 = Monday 00:00 UTC
    row += [math.sin(2 * math.pi * day), math.cos(2 * math.pi * day),
            math.sin(2 * math.pi * week), math.cos(2 * math.pi * week)]
    return row


def last_value(samples, at):
    """The demand of the last sample before ``at`` (NaN without one): the level predictions
    are made relative to, since trees cannot extrapolate beyond the levels they were fitted on."""
    found = window(samples, at - DAY, at)
    return float(found[-1].gpus) if found else math.nan


def _level(row):
    return 0.0 if math.isnan(row[0]) else row[0]


def target(samples, at, lead):
    """What is predicted at ``at``: the peak demand in [at, at + lead) (NaN without samples)."""
    return _peak(samples, at, at + lead)


def _settings(forecast):
    bucket = forecast.bucket_minutes * 60.0
    return bucket, max(forecast.lead_time, bucket)


def _regressor():
    try:
        from sklearn.ensemble import HistGradientBoostingRegressor
    except ImportError:
        raise LearnError("learned needs scikit-learn, which is not installed; fix: "
                         f"{INSTALL_HINT}, or set forecast.method: seasonal") from None
    # small and regularized: a few thousand training points at most (weeks of 15-minute buckets)
    return HistGradientBoostingRegressor(max_iter=100, learning_rate=0.05, max_leaf_nodes=15, min_samples_leaf=40,
                                         l2_regularization=1.0, random_state=0)


def fit(samples, forecast, split):
    """Fit on ``samples`` (DemandSamples sorted by minute) before ``split`` only; -> LearnedForecaster.

    Training points are the bucket boundaries whose target window ends at or before ``split``
    and that have at least a day of history before them."""
    bucket, lead = _settings(forecast)
    regressor = _regressor()
    history = window(samples, -math.inf, split)      # nothing at or after the split is read
    if not history:
        raise LearnError(f"no demand history before the split {split:.0f}; fix: start the replay later "
                         "(--from) so there is history to train on, or set forecast.method: seasonal")
    start = boundary(history[0].minute, bucket) + DAY
    rows, targets = [], []
    at = start
    while at + lead <= split:
        value = target(history, at, lead)
        if not math.isnan(value):
            row = features(history, at, bucket, lead)
            rows.append(row)
            targets.append(value - _level(row))
        at += bucket
    if len(rows) < MIN_POINTS:
        raise LearnError(f"{len(rows)} training points before the split (at least {MIN_POINTS} needed: a day of "
                         "history plus half a day of targets); fix: give more history before --from, or set "
                         "forecast.method: seasonal")
    # a feature never seen in training (the week-ago pair with under a week of history) is left
    # out: the regressor cannot bin a column that is all missing
    keep = [i for i in range(len(rows[0])) if any(not math.isnan(row[i]) for row in rows)]
    from threadpoolctl import threadpool_limits       # installed with scikit-learn
    with threadpool_limits(1):      # a few thousand rows: OpenMP threads cost more than they save
        regressor.fit([[row[i] for i in keep] for row in rows], targets)
    return LearnedForecaster(regressor, bucket, lead, trained_until=split, points=len(rows), keep=keep)


class Unfitted:
    """A pool's stand-in for a model not fitted (yet): ``why`` is said in the plan's notes, and
    the planner forecasts as ``forecast.fallback`` says."""

    def __init__(self, why):
        self.why = why


class LearnedForecaster:
    """A fitted model: ``predict_gpus(samples, now)`` -> (GPUs wanted over the lead time, why)."""

    def __init__(self, regressor, bucket, lead, trained_until, points, keep):
        self.regressor, self.bucket, self.lead, self.keep = regressor, bucket, lead, keep
        self.trained_until, self.points = trained_until, points
        self._memo = {}       # feature vector -> prediction: many passes fall in one bucket

    def predict_gpus(self, samples, now):
        at = boundary(now, self.bucket)
        row = features(samples or (), at, self.bucket, self.lead)
        key = tuple(None if math.isnan(v) else v for v in row)
        if key not in self._memo:
            self._memo[key] = max(0.0, _level(row) + float(self.regressor.predict([self._kept(row)])[0]))
        return self._memo[key], {"method": "learned", "read_at": at, "trained_until": self.trained_until,
                                 "training_points": self.points, "lead_time_s": self.lead}

    def predict_many(self, samples, times):
        """Predictions at many boundaries in one call (the evaluation)."""
        rows = [features(samples, boundary(t, self.bucket), self.bucket, self.lead) for t in times]
        if not rows:
            return []
        predicted = self.regressor.predict([self._kept(row) for row in rows])
        return [max(0.0, _level(row) + float(v)) for row, v in zip(rows, predicted)]

    def _kept(self, row):
        return [row[i] for i in self.keep]
