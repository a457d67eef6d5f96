"""The metric store the live view, replay, export and benchmark all read.

Every point is kept, its value an exact float64, in numpy columns — never lists of dicts —
so a plot reads a slice, not a Python loop. Keys logged together share their step and
wall-time columns (`rows.RowGroup`): six SFT keys logged every step cost 9.3 bytes a point
(8 for the value, 8 a row shared by the six: an int32 step, a float32 wall time) where an
int64 step and a float64 time per point cost 24.
Eval metrics are series of their own under the names they were logged with (`eval_loss`).

Resumed runs repeat steps. The rule, applied the same way to a live journal
(`add`/`add_many`) and to a trainer_state.json (`from_trainer_state`):

- a record at a step *lower* than the record before it rewinds the store:
  every series drops its points at that step and later (that is what a
  resume means: the run went back to a checkpoint and logs those steps again);
- a record at the step a series already ends on overwrites that point (last
  value wins; another key logged at the same step — train and eval — is kept).

NaN and ±inf are kept (they are what the trainer logged); `downsample` drops
them for plotting and `ema` steps over them. `version` goes up on every change
so a UI can skip redraws; `plot_points` gives a panel its downsampled points at a cost
that does not grow with the series.

Modules: `metric_store` (MetricStore), `rows` (the layout), `ingest` (logged dicts to
columns), `values` (what a metric value is, the resume rule). Plot maths (downsampling,
smoothing, the plot summaries) is in `cockpit.metrics.plotmath`; the completions ring buffer
and the log history rows are in `cockpit.metrics.buffers`.
"""

from cockpit.metrics.store.metric_store import MAX_KEYS, SERIES_KINDS, MetricStore

__all__ = ["MAX_KEYS", "SERIES_KINDS", "MetricStore"]
