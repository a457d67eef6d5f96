"""MetricStore, downsampling, smoothing, completions and log rows."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cockpit.metrics.buffers import CompletionsBuffer, LogRows
from cockpit.metrics.plotmath import downsample, ema, quantiles
from cockpit.metrics.store import MetricStore
from cockpit.run import journal


def m(step, t=None, **values):
    rec = journal.metrics(step, values, epoch=step / 10)
    if t is not None:
        rec.t = t
    return rec


def e(step, **values):
    return journal.eval_metrics(step, values)


# -- the store ---------------------------------------------------------------------------------


def test_series_are_numpy_arrays_in_step_order():
    s = MetricStore()
    for step in range(1, 6):
        s.add(m(step, loss=1.0 / step, lr=0.1))
    x, y = s.series("loss")
    assert x.dtype == np.int64 and y.dtype == np.float64
    assert x.tolist() == [1, 2, 3, 4, 5]
    assert y[-1] == pytest.approx(0.2)
    assert s.keys() == ["loss", "lr"] and len(s) == 2 and s.count("loss") == 5
    assert s.latest("loss") == pytest.approx(0.2) and s.latest_step("loss") == 5
    assert s.latest("missing") is None
    assert s.series("missing")[0].size == 0


def test_the_last_value_wins_when_a_step_repeats():
    s = MetricStore()
    s.add(m(1, loss=1.0))
    s.add(m(2, loss=2.0))
    s.add(m(2, loss=3.0))
    assert s.series("loss")[0].tolist() == [1, 2]
    assert s.series("loss")[1].tolist() == [1.0, 3.0]


def test_a_resume_truncates_every_series_back_to_its_step():
    s = MetricStore()
    for step in range(1, 11):
        s.add(m(step, loss=float(step)))
    s.add(e(10, eval_loss=5.0))
    s.add(m(6, loss=60.0))  # resumed from checkpoint-5
    s.add(m(7, loss=70.0))
    assert s.series("loss")[0].tolist() == [1, 2, 3, 4, 5, 6, 7]
    assert s.series("loss")[1].tolist()[-2:] == [60.0, 70.0]
    assert "eval_loss" not in s  # logged at step 10, after the resume point
    assert s.rewinds == 1 and s.last_step == 7


def test_train_and_eval_at_the_same_step_are_both_kept():
    s = MetricStore()
    s.add(m(20, loss=1.0))
    s.add(e(20, eval_loss=2.0))
    s.add(m(21, loss=0.9))
    assert s.series("loss")[0].tolist() == [20, 21]
    assert s.series("eval_loss")[0].tolist() == [20]


def test_nan_and_inf_are_kept_in_the_store():
    s = MetricStore()
    s.add(m(1, grad_norm=math.nan))
    s.add(m(2, grad_norm=math.inf))
    y = s.series("grad_norm")[1]
    assert math.isnan(y[0]) and y[1] == math.inf
    s.add(m(3, grad_norm=math.nan))
    assert math.isnan(s.latest("grad_norm"))


def test_the_summary_entry_is_not_a_series():
    s = MetricStore()
    s.add(m(10, loss=1.0))
    s.add(journal.metrics(10, {"train_runtime": 12.0, "train_loss": 0.9, "total_flos": 1e9}))
    assert s.keys() == ["loss"]
    assert s.summary == {"train_runtime": 12.0, "train_loss": 0.9, "total_flos": 1e9}


def test_version_changes_only_when_the_store_does():
    s = MetricStore()
    v0 = s.version
    assert not s.add(journal.phase("training"))
    assert s.version == v0
    s.add(m(1, loss=1.0))
    v1 = s.version
    assert v1 > v0
    s.add_many([journal.phase("saving"), journal.system({"cpu": 1})])
    assert s.version == v1
    s.add_many([m(2, loss=0.5)])
    assert s.version > v1


def test_progress_and_run_started_set_max_steps():
    s = MetricStore()
    s.add(journal.run_started("sft", max_steps=100))
    assert s.max_steps == 100
    s.add_many([journal.progress(5, 120)])
    assert s.max_steps == 120


def test_time_axis_counts_seconds_from_the_first_record():
    s = MetricStore()
    s.add_many([m(1, t=1000.0, loss=1.0), m(2, t=1002.5, loss=0.5)])
    s.add(m(3, t=1010.0, loss=0.25))
    x, _ = s.series("loss", x="time")
    assert x.tolist() == [0.0, 2.5, 10.0]
    assert s.has_wall_time


def test_trainer_state_sources_have_no_wall_time():
    s = MetricStore.from_trainer_state(b'{"log_history": [{"step": 1, "loss": 1.0}]}')
    assert not s.has_wall_time
    assert np.isnan(s.series("loss", x="time")[0]).all()


def test_a_flood_of_keys_is_capped_not_fatal(monkeypatch):
    monkeypatch.setattr(MetricStore, "MAX_KEYS", 50)
    s = MetricStore()
    s.add(m(1, **{f"k{i}": 1.0 for i in range(80)}))
    s.add_many([m(2, **{f"j{i}": 1.0 for i in range(80)})])
    assert len(s) == 50
    assert s.warnings


_record = st.tuples(
    st.sampled_from([journal.METRICS, journal.EVAL]),
    st.integers(min_value=0, max_value=15),
    st.dictionaries(st.sampled_from(["loss", "lr", "eval_loss", "train_runtime", "r"]),
                    st.one_of(st.floats(allow_nan=True), st.integers(-5, 5), st.none(),
                              st.sampled_from(["0.5", "x", True])), max_size=4),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_record, max_size=30), st.integers(min_value=0, max_value=30))
def test_add_many_equals_add_one_by_one(items, split):
    """However a journal's records are batched into polls, the store ends up the same."""
    records = []
    for i, (kind, step, values) in enumerate(items):
        rec = journal.Record(kind, {"epoch": None, **values}, step=step, t=1000.0 + i)
        records.append(rec)
    one = MetricStore()
    for rec in records:
        one.add(rec)
    batched = MetricStore()
    batched.add_many(records[:split])
    batched.add_many(records[split:])
    assert sorted(one.keys()) == sorted(batched.keys())
    for key in one.keys():
        for axis in ("step", "time"):
            np.testing.assert_array_equal(one.series(key, x=axis)[0], batched.series(key, x=axis)[0])
        np.testing.assert_array_equal(one.series(key)[1], batched.series(key)[1])
        assert np.all(np.diff(one.series(key)[0]) > 0)
    assert one.summary.keys() == batched.summary.keys()
    assert one.last_step == batched.last_step


# -- downsampling and smoothing ----------------------------------------------------------------


def test_downsampling_keeps_a_single_spike_in_a_million_points():
    rng = np.random.default_rng(0)
    y = rng.normal(size=1_000_000)
    y[654_321] = 1e6
    x = np.arange(len(y), dtype=np.int64)
    xs, ys = downsample(x, y, 200)
    assert len(xs) <= 200
    assert ys.max() == 1e6 and 654_321 in xs.tolist()


def test_downsampling_drops_nan_and_inf_without_breaking():
    x = np.arange(10_000, dtype=np.int64)
    y = np.sin(x / 100.0)
    y[::7] = np.nan
    y[5] = np.inf
    xs, ys = downsample(x, y, 100)
    assert len(xs) <= 100 and np.isfinite(ys).all()
    small_x, small_y = downsample(x[:20], y[:20], 100)  # fast path: finite points only
    assert np.isfinite(small_y).all() and len(small_x) == 20 - 3 - 1


def test_downsampling_returns_short_series_untouched():
    x = np.array([1, 2, 3])
    y = np.array([0.1, 0.2, 0.3])
    xs, ys = downsample(x, y, 200)
    assert xs.tolist() == [1, 2, 3] and ys.tolist() == [0.1, 0.2, 0.3]


@pytest.mark.parametrize("n_out", [0, 1, 2, 3, 5])
def test_downsampling_to_tiny_sizes_never_exceeds_n_out(n_out):
    x = np.arange(1000, dtype=np.float64)
    xs, ys = downsample(x, np.cos(x), n_out)
    assert len(xs) == len(ys) <= n_out


def test_downsampling_accepts_unsorted_time_axes():
    x = np.array([3.0, 1.0, 2.0, np.nan] * 100) + np.repeat(np.arange(100) * 10.0, 4)
    xs, _ys = downsample(x, np.ones_like(x), 20)
    assert len(xs) <= 20 and np.all(np.diff(xs) >= 0)


def reference_ema(values, w):
    """TensorBoard's smoothing loop, verbatim in Python."""
    finite = [v for v in values if math.isfinite(v)]
    if finite and all(v == finite[0] for v in finite):
        return list(values)
    out, last, n = [], 0.0, 0
    for v in values:
        if not math.isfinite(v):
            out.append(v)
            continue
        last = last * w + (1 - w) * v
        n += 1
        out.append(last / (1 - w ** n))
    return out


def test_ema_of_a_constant_series_is_the_constant():
    for w in (0.0, 0.6, 0.9, 0.99, 0.999):
        assert ema(np.full(5000, 0.693), w).tolist() == [0.693] * 5000


def test_ema_is_debiased_from_the_first_point():
    assert ema([4.0, 0.0], 0.9)[0] == pytest.approx(4.0)


def test_ema_steps_over_nan_and_keeps_it():
    out = ema([1.0, math.nan, 3.0, math.inf], 0.5)
    assert out[0] == 1.0 and math.isnan(out[1]) and out[3] == math.inf
    assert out[2] == pytest.approx(reference_ema([1.0, 3.0], 0.5)[1])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.floats(-1e6, 1e6), st.just(math.nan)), max_size=300),
       st.sampled_from([0.0, 0.1, 0.5, 0.9, 0.99, 0.999]))
def test_ema_matches_tensorboard(values, w):
    got = ema(values, w)
    want = reference_ema(values, w)
    assert len(got) == len(want)
    for a, b in zip(got, want, strict=False):
        assert (math.isnan(a) and math.isnan(b)) or a == pytest.approx(b, rel=1e-9, abs=1e-6)


def test_ema_over_long_series_matches_tensorboard():
    rng = np.random.default_rng(1)
    values = rng.normal(size=20_000)
    values[rng.integers(0, 20_000, 100)] = np.nan
    for w in (0.3, 0.95, 0.9995):
        np.testing.assert_allclose(ema(values, w), reference_ema(values.tolist(), w), rtol=1e-8, atol=1e-9)


@pytest.mark.parametrize("w", [1e-9, 0.1, 0.5, 0.6, 0.9, 0.99, 0.9995, 0.999999])
def test_the_debias_factors_are_the_floats_of_every_power(w):
    """`_debias` raises w only to the powers whose 1 - w^k is not 1.0 exactly: the same floats
    as raising every one, from any start."""
    from cockpit.metrics.plotmath import _debias

    for done, n in ((0, 5000), (0, 1), (37, 300), (4096, 2000), (200_000, 10)):
        want = 1.0 - w ** np.arange(done + 1, done + n + 1, dtype=np.float64)
        np.testing.assert_array_equal(_debias(w, done, n), want)


@pytest.mark.parametrize("w", [0.1, 0.6, 0.9, 0.99, 0.9995])
def test_the_ema_of_whole_blocks_at_once_is_the_floats_of_one_block_at_a_time(w):
    """`_ema_run` does the whole blocks in one numpy pass: the same floats as `_ema_blocks`,
    from any carried value, with a remainder or without, and with values that overflow the
    scaling (done plainly)."""
    from cockpit.metrics.plotmath import _ema_block, _ema_blocks, _ema_run

    rng = np.random.default_rng(7)
    block = _ema_block(w)
    for n in (block, 2 * block, 5 * block, 5 * block + 3, 40_000):
        f = rng.normal(size=n) * 10.0 ** rng.integers(-3, 4, size=n)
        for last in (0.0, 1.5):
            np.testing.assert_array_equal(_ema_run(f, w, last), _ema_blocks(f, w, last))
    huge = rng.normal(size=5 * block)
    huge[3 * block + 1] = 1e300
    np.testing.assert_array_equal(_ema_run(huge, w, 0.0), _ema_blocks(huge, w, 0.0))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.floats(-1e12, 1e12), min_size=1, max_size=400),
       st.lists(st.floats(0.0, 1.0), min_size=1, max_size=4))
def test_quantiles_are_numpy_s_floats(values, qs):
    """The plots' robust range takes its percentiles from `quantiles` (np.quantile's first call
    imports numpy.ma on the UI thread): the same floats as np.quantile's linear method."""
    np.testing.assert_array_equal(quantiles(np.array(values), qs), np.quantile(np.array(values), qs))


# -- completions and log rows ------------------------------------------------------------------


def test_completions_buffer_keeps_the_newest_rows_with_their_step():
    buf = CompletionsBuffer()
    assert buf.capacity == 2000
    for step in range(25):
        rows = [{"prompt": f"p{step}-{i}", "completion": "c", "rewards": {"acc": 1.0},
                 "advantage": 0.5} for i in range(100)]
        buf.add(journal.completions(step, rows, source="trainer_logs"))
    assert len(buf) == 2000 and buf.total == 2500
    assert buf.rows()[0]["prompt"] == "p5-0" and buf.rows()[0]["step"] == 5
    assert buf.latest_step == 24 and buf.steps()[0] == 5
    assert len(buf.rows(step=24)) == 100
    assert buf.rows()[-1]["source"] == "trainer_logs"


def test_completions_rows_are_made_readable():
    buf = CompletionsBuffer(10)
    buf.add_rows(3, [{"prompt": [{"role": "user", "content": "hi"}],
                      "completion": [{"role": "assistant", "content": "yo"}],
                      "rewards": {"a": None, "b": "0.5"}, "advantage": None}, "not a row"])
    row = buf.rows()[0]
    assert row["prompt"] == "user: hi" and row["completion"] == "assistant: yo"
    assert math.isnan(row["rewards"]["a"]) and row["rewards"]["b"] == 0.5
    assert row["advantage"] is None and len(buf) == 1


def test_log_rows_are_bounded_and_version_counts_rows_added():
    rows = LogRows(capacity=3)
    rows.add_many([m(i, loss=1.0) for i in range(5)] + [journal.phase("x")])
    assert [r.step for r in rows.rows()] == [2, 3, 4]
    assert rows.version == 3
    rows.add(e(5, eval_loss=1.0))
    assert rows.version == 4 and len(rows) == 3
    assert rows.columns() == ["epoch", "loss", "eval_loss"]


# -- the layout: row groups ------------------------------------------------------------------


SFT = ("loss", "grad_norm", "learning_rate", "entropy", "num_tokens", "mean_token_accuracy")


def test_keys_logged_together_share_one_step_and_time_column():
    s = MetricStore()
    for poll in range(10):  # polls of 1 000 steps, as a live view reads a journal
        s.add_many([m(st, t=1000.0 + st, **{k: st * 0.5 for k in SFT})
                    for st in range(poll * 1000 + 1, poll * 1000 + 1001)])
        s.add(e(poll * 1000 + 1000, eval_loss=1.0, eval_runtime=2.0))
    assert sorted(map(sorted, (keys for keys, _ in s.groups))) == [
        sorted(SFT), ["eval_loss", "eval_runtime"]]
    points = 10_000 * len(SFT) + 10 * 2
    # 8 bytes a value, 8 a row (int32 step, float32 time) shared by the group's keys
    exact = 10_000 * (8 * len(SFT) + 8) + 10 * (8 * 2 + 8)
    assert exact / points < 9.4
    assert s.nbytes <= 1.5 * exact + 4096  # room to grow by half
    x, y = s.series("grad_norm", x="time")
    assert x[0] == 0.0 and x[-1] == 9999.0 and y[-1] == 5000.0


def test_wall_times_keep_a_plot_s_precision_for_months():
    s = MetricStore()
    t = 1.7e9 + np.cumsum(np.full(100_000, 30.0 + 1 / 3))  # a month at one step each 30.33 s
    s.add_columns(np.arange(1, 100_001), {"loss": np.ones(100_000)}, times=t)
    x, _ = s.series("loss", x="time")
    assert np.abs(x - (t - t[0])).max() < 0.25


def test_steps_past_int32_are_kept_exactly():
    s = MetricStore()
    s.add_many([m(st, loss=1.0) for st in (1, 2, 2**31 - 1)])
    assert s.series("loss", copy=False)[0].dtype == np.int32  # 4 bytes a row while steps fit
    s.add_many([m(2**31, loss=2.0), m(2**40, loss=3.0)])
    x, _ = s.series("loss")
    assert x.dtype == np.int64 and x.tolist() == [1, 2, 2**31 - 1, 2**31, 2**40]
    s.add(m(-5, loss=4.0))  # a rewind to below zero
    assert s.series("loss")[0].tolist() == [-5]


def test_a_key_left_out_of_a_record_leaves_its_group_and_keeps_its_points():
    s = MetricStore()
    s.add_many([m(1, a=1.0, b=1.0), m(2, a=2.0, b=2.0)])
    s.add(journal.metrics(3, {"a": 3.0, "b": None}))  # b not logged at step 3 (GRPO: a None reward)
    s.add(m(4, a=4.0, b=4.0))
    assert s.series("a")[0].tolist() == [1, 2, 3, 4]
    assert s.series("b")[0].tolist() == [1, 2, 4] and s.series("b")[1].tolist() == [1.0, 2.0, 4.0]
    assert sorted(keys for keys, _ in s.groups) == [["a"], ["b"]]
    s.add(m(2, a=20.0, b=20.0))  # a resume: both rewind, then are logged together again
    assert s.series("a")[0].tolist() == [1, 2] and s.series("b")[1].tolist() == [1.0, 20.0]


def test_a_key_that_appears_later_gets_its_own_group():
    s = MetricStore()
    s.add_many([m(st, loss=1.0) for st in range(1, 6)])
    s.add_many([m(st, loss=2.0, kl=0.1) for st in range(6, 9)])
    assert s.series("loss")[0].tolist() == list(range(1, 9))
    assert s.series("kl")[0].tolist() == [6, 7, 8]
    assert s.keys() == ["loss", "kl"]


def _reference(records):
    """The store's rules on plain dicts: key -> {step: (value, t)}, one record at a time."""
    points: dict[str, dict[int, tuple[float, float]]] = {}
    last = None
    for rec in records:
        values = {k: float(v) for k, v in rec.data.items()
                  if k not in ("step", "epoch") and type(v) in (int, float)}
        if "train_runtime" in values:
            continue
        if last is not None and rec.step < last:
            for series in points.values():
                for st in [st for st in series if st >= rec.step]:
                    del series[st]
        for k, v in values.items():
            points.setdefault(k, {})[rec.step] = (v, rec.t)
        last = rec.step
    return {k: sorted(v.items()) for k, v in points.items() if v}


_values = st.one_of(st.floats(allow_nan=False), st.integers(-5, 5), st.none())


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.integers(0, 12), st.dictionaries(st.sampled_from("abcd"), _values, max_size=4)),
                max_size=40),
       st.lists(st.integers(1, 40), max_size=4))
def test_row_groups_hold_what_one_series_per_key_would(items, cuts):
    """However keys come and go and steps repeat or go back, every key's points are those a
    plain step -> value map per key would hold."""
    records = [journal.Record(journal.METRICS, values, step=step, t=1000.0 + i)
               for i, (step, values) in enumerate(items)]
    s = MetricStore()
    start = 0
    for cut in [*sorted(cuts), len(records)]:
        s.add_many(records[start:cut])
        start = max(start, cut)
    want = _reference(records)
    assert sorted(s.keys()) == sorted(want)
    for key, pts in want.items():
        x, y = s.series(key)
        t, _ = s.series(key, x="time")
        assert x.tolist() == [p[0] for p in pts]
        assert y.tolist() == [p[1][0] for p in pts]
        assert (t + s.t0).tolist() == [p[1][1] for p in pts]


def test_add_columns_applies_the_same_rules():
    s = MetricStore()
    s.add_columns(np.arange(1, 11), {"loss": np.arange(10.0), "lr": np.ones(10)},
                  times=1000.0 + np.arange(10))
    s.add_columns([5, 6], {"loss": np.array([50.0, 60.0]), "lr": np.zeros(2)})  # a resume
    assert s.series("loss")[0].tolist() == [1, 2, 3, 4, 5, 6]
    assert s.series("loss")[1].tolist()[-2:] == [50.0, 60.0]
    assert s.last_step == 6 and s.rewinds == 1 and s.t0 == 1000.0
    assert np.isnan(s.series("lr", x="time")[0][-1])  # no wall time given for that row


def test_a_pickled_store_holds_its_rows_and_keeps_growing():
    import pickle

    s = MetricStore()
    s.add_columns(np.arange(1, 100_001), {"loss": np.linspace(2, 0, 100_000)})
    s.plot_points("loss", n_out=100)
    blob = pickle.dumps(s, protocol=pickle.HIGHEST_PROTOCOL)
    assert len(blob) < 100_000 * 16 + 10_000  # the rows, not the room to grow nor the plot caches
    back = pickle.loads(blob)
    back.add(m(100_001, loss=-1.0))
    assert back.count("loss") == 100_001 and back.latest("loss") == -1.0
    np.testing.assert_array_equal(back.series("loss")[1][:-1], s.series("loss")[1])


# -- plot points: downsampling that does not grow with the series ------------------------------


def test_plot_points_of_a_short_series_are_downsample_of_the_series():
    s = MetricStore()
    rng = np.random.default_rng(3)
    s.add_columns(np.arange(1, 4001), {"loss": rng.normal(size=4000)}, times=1e9 + np.arange(4000.0))
    for x in ("step", "time"):
        for w in (0.0, 0.9):
            xs, ys = s.series("loss", x=x)
            want = downsample(xs, ema(ys, w) if w else ys, 156, sorted_x=x == "step")
            got = s.plot_points("loss", x, n_out=156, smoothing=w)
            np.testing.assert_array_equal(got[0], want[0])
            np.testing.assert_array_equal(got[1], want[1])


@pytest.mark.parametrize("smoothing", [0.0, 0.6, 0.99])
def test_plot_points_of_a_growing_series_keep_spikes_and_the_smoothed_values(smoothing):
    """Fed in polls as a live view is, a 300k-point series with a spike and NaN gaps: at most
    n_out points, all finite, each the value `ema` gives the whole series there (bit for
    bit), the spike kept, the first and last points drawn."""
    rng = np.random.default_rng(7)
    n = 300_000
    y = rng.normal(size=n).cumsum()
    y[123_456] += 1e5
    y[200_000:200_500] = np.nan
    y[5] = np.inf
    s = MetricStore()
    for a in range(0, n, 9_973):
        b = min(n, a + 9_973)
        s.add_columns(np.arange(a + 1, b + 1), {"loss": y[a:b]}, times=1e9 + np.arange(a, b) * 2.0)
        xs, ys = s.plot_points("loss", n_out=150, smoothing=smoothing)
        assert 0 < len(xs) <= 150 and np.isfinite(ys).all()
    full = ema(y, smoothing) if smoothing else y
    np.testing.assert_array_equal(ys, full[xs - 1])
    assert xs[0] == 1 and xs[-1] == n
    if smoothing == 0.0:
        assert 123_457 in xs.tolist()
    xt, yt = s.plot_points("loss", "time", n_out=150, smoothing=smoothing)
    np.testing.assert_array_equal(xt, (xs - 1) * 2.0)  # the same points, in seconds
    np.testing.assert_array_equal(yt, ys)


def test_plot_points_start_over_after_a_rewind():
    s = MetricStore()
    s.add_columns(np.arange(1, 100_001), {"loss": np.ones(100_000)})
    assert s.plot_points("loss", n_out=100)[1].max() == 1.0
    s.add_columns(np.arange(50_000, 100_001), {"loss": np.full(50_001, 5.0)})  # resumed at 50k
    xs, ys = s.plot_points("loss", n_out=100)
    assert xs[-1] == 100_000 and set(ys.tolist()) == {1.0, 5.0}
    assert ys[xs < 50_000].max() == 1.0 and ys[xs >= 50_000].min() == 5.0


def test_a_flat_series_is_drawn_unsmoothed_until_it_moves():
    s = MetricStore()
    s.add_columns(np.arange(1, 60_001), {"lr": np.full(60_000, 1e-4)})
    assert set(s.plot_points("lr", n_out=100, smoothing=0.9)[1].tolist()) == {1e-4}
    s.add(m(60_001, lr=0.0))
    xs, ys = s.plot_points("lr", n_out=100, smoothing=0.9)
    _, y = s.series("lr")
    np.testing.assert_array_equal(ys, ema(y, 0.9)[xs - 1])


def test_bools_and_nulls_among_zeros_and_ones_are_not_values():
    """Values are read as one table per set of keys; numpy would read True as 1.0 and None as
    NaN, so cells that came out 0, 1 or NaN are looked at — whether few or most are."""
    rows = []
    for st_ in range(1, 201):
        rows.append(m(st_, few=0.5 if st_ != 50 else True, most=float(st_ % 2),
                      gone=None if st_ == 7 else 2.0, nan=math.nan))
    s = MetricStore.from_records(rows)
    assert s.count("few") == 199 and 50 not in s.series("few")[0].tolist()
    assert s.count("most") == 200 and s.count("gone") == 199 and s.count("nan") == 200
    rows.append(m(201, few=0.5, most=False, gone=2.0, nan=math.nan))
    s = MetricStore.from_records(rows)
    assert s.count("most") == 200 and 201 not in s.series("most")[0].tolist()
