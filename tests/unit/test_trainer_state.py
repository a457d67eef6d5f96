"""trainer_state.json → journal records: the real fixtures and everything odd about them."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cockpit.errors import CockpitError
from cockpit.metrics.store import MetricStore
from cockpit.metrics.trainer_state import is_summary, metric_values, parse_trainer_state, to_int
from cockpit.run import journal
from helpers import FIXTURES

# log_history entries per fixture (PROVENANCE.md)
ENTRIES = {
    "trl_dpo_nan_gradnorm_midrun.json": 75,
    "trl_orpo_recsys.json": 34,
    "trl_grpo_modern_multireward.json": 40,
    "trl_grpo_legacy_reward_keys.json": 25,
    "trl_sft_token_accuracy.json": 30,
    "seq2seq_whisper_eval_wer_legacy_format.json": 206,
    "trainer_eval_best_checkpoint.json": 31,
    "trainer_early_stopping_windows_path.json": 6,
    "sft_3765_steps_first_log_spike.json": 94,
    "trl_grpo_1134_steps_noisy.json": 226,
}


def parse_fixture(name: str):
    return parse_trainer_state((FIXTURES / name).read_bytes(), source=name)


def state(log_history, **header) -> bytes:
    return json.dumps({"global_step": 0, "max_steps": 0, **header, "log_history": log_history}).encode()


def test_every_fixture_is_covered():
    assert sorted(p.name for p in FIXTURES.glob("*.json")) == sorted(ENTRIES)


@pytest.mark.parametrize("name", sorted(ENTRIES))
def test_fixture_entries_all_become_records(name):
    parsed = parse_fixture(name)
    assert len(parsed) == ENTRIES[name]
    assert len(parsed.records) == ENTRIES[name]
    assert parsed.warnings == []
    assert all(r.kind in (journal.METRICS, journal.EVAL) for r in parsed.records)


@pytest.mark.parametrize("name", sorted(ENTRIES))
def test_fixture_values_match_the_stdlib_reading(name):
    """Every number json.loads sees is in a record, under its logged name, NaN included."""
    history = json.loads((FIXTURES / name).read_text())["log_history"]
    parsed = parse_fixture(name)
    for entry, record in zip(history, parsed.records, strict=False):
        assert record.step == entry["step"]
        assert record.data["epoch"] == entry["epoch"]
        expected = {k: float(v) for k, v in entry.items()
                    if k not in ("step", "epoch") and isinstance(v, (int, float))}
        got = {k: v for k, v in record.data.items() if k not in ("epoch", "summary")}
        assert got.keys() == expected.keys()
        for k, v in expected.items():
            assert got[k] == v or (math.isnan(v) and math.isnan(got[k]))


@pytest.mark.parametrize("name", sorted(ENTRIES))
def test_fixture_store_agrees_with_its_records(name):
    parsed = parse_fixture(name)
    columnar = MetricStore.from_parsed(parsed)
    one_by_one = MetricStore()
    for record in parsed.records:
        one_by_one.add(record)
    assert_same_store(columnar, one_by_one)


def assert_same_store(a: MetricStore, b: MetricStore) -> None:
    assert sorted(a.keys()) == sorted(b.keys())
    for key in a.keys():
        xa, ya = a.series(key)
        xb, yb = b.series(key)
        np.testing.assert_array_equal(xa, xb)
        np.testing.assert_array_equal(ya, yb)  # NaN == NaN for assert_array_equal
    assert a.summary.keys() == b.summary.keys()
    assert a.last_step == b.last_step


def test_dpo_nan_grad_norms_are_kept_as_nan():
    parsed = parse_fixture("trl_dpo_nan_gradnorm_midrun.json")
    nan_steps = [r.step for r in parsed.records if math.isnan(r.data["grad_norm"])]
    assert nan_steps == [1, 2, 18, 74]
    steps, values = MetricStore.from_parsed(parsed).series("grad_norm")
    assert steps[np.isnan(values)].tolist() == [1, 2, 18, 74]
    assert parsed.global_step == 75 and parsed.max_steps == 100
    assert not parsed.is_finished
    assert parsed.best_metric is None and parsed.best_global_step is None


def test_eval_entries_sharing_a_step_with_train_entries_are_both_kept():
    parsed = parse_fixture("seq2seq_whisper_eval_wer_legacy_format.json")
    evals = [r for r in parsed.records if r.kind == journal.EVAL]
    assert [r.step for r in evals] == [1000, 2000, 3000, 4000, 5000]
    train_steps = {r.step for r in parsed.records if r.kind == journal.METRICS}
    assert {1000, 2000, 3000, 4000, 5000} <= train_steps
    assert all("eval_wer" in r.data and "loss" not in r.data for r in evals)
    store = MetricStore.from_parsed(parsed)
    assert store.count("eval_wer") == 5
    assert store.count("loss") == 200
    # best_metric is the lowest eval_wer (greater_is_better=false)
    assert parsed.best_metric == pytest.approx(min(r.data["eval_wer"] for r in evals))
    assert parsed.best_model_checkpoint.endswith("/checkpoint-3000")


def test_legacy_grpo_reward_keys_keep_their_names():
    parsed = parse_fixture("trl_grpo_legacy_reward_keys.json")
    keys = MetricStore.from_parsed(parsed).keys()
    assert "rewards/correctness_reward_func" in keys
    assert "completion_length" in keys
    assert not any(k.endswith("/mean") for k in keys)
    assert parsed.records[0].data["loss"] == 0.0


def test_modern_grpo_reward_keys_and_negative_loss():
    store = MetricStore.from_parsed(parse_fixture("trl_grpo_modern_multireward.json"))
    assert "rewards/format_reward_fn/mean" in store.keys()
    assert "completions/clipped_ratio" in store.keys()
    assert store.series("loss")[1].min() < 0


def test_windows_path_is_kept_intact():
    parsed = parse_fixture("trainer_early_stopping_windows_path.json")
    assert parsed.best_model_checkpoint == "./results\\checkpoint-500"
    assert parsed.best_global_step == 500
    assert parsed.best_metric == pytest.approx(0.9075070332933693)
    assert not parsed.is_finished  # step 500 of 20250, should_training_stop false


@pytest.mark.parametrize("name", ["trl_orpo_recsys.json", "trainer_eval_best_checkpoint.json",
                                  "seq2seq_whisper_eval_wer_legacy_format.json"])
def test_the_final_summary_entry_is_recognised(name):
    parsed = parse_fixture(name)
    last = parsed.records[-1]
    assert last.kind == journal.METRICS and last.data["summary"] is True
    assert "train_loss" in last.data and "loss" not in last.data
    assert sum(1 for r in parsed.records if r.data.get("summary")) == 1
    assert parsed.is_finished
    store = MetricStore.from_parsed(parsed)
    assert store.summary["train_loss"] == last.data["train_loss"]
    assert "train_runtime" not in store.keys()  # one value, not a series


def test_orpo_without_best_global_step_and_with_big_flos():
    parsed = parse_fixture("trl_orpo_recsys.json")
    assert parsed.best_global_step is None
    assert parsed.records[-1].data["total_flos"] == pytest.approx(1.034399076235346e17)


# -- tolerance ---------------------------------------------------------------------------------


def test_nan_and_infinity_literals_parse():
    raw = b'{"log_history": [{"step": 1, "a": NaN, "b": Infinity, "c": -Infinity, "d": 1.5}]}'
    data = parse_trainer_state(raw).records[0].data
    assert math.isnan(data["a"]) and data["b"] == math.inf and data["c"] == -math.inf
    assert data["d"] == 1.5


def test_nan_words_inside_strings_are_left_alone():
    raw = (b'{"best_model_checkpoint": "/runs/NaN-Infinity/checkpoint-1", '
           b'"log_history": [{"step": 1, "loss": NaN, "note": "-Infinity NaN"}]}')
    parsed = parse_trainer_state(raw)
    assert parsed.best_model_checkpoint == "/runs/NaN-Infinity/checkpoint-1"
    assert math.isnan(parsed.records[0].data["loss"])
    assert "note" not in parsed.records[0].data


def test_string_numbers_are_read_and_other_strings_bools_and_nulls_dropped():
    raw = state([{"step": 1, "a": "0.5", "b": "fast", "c": True, "d": None, "e": [1, 2], "f": 3}])
    data = parse_trainer_state(raw).records[0].data
    assert data["a"] == 0.5 and data["f"] == 3.0
    assert not {"b", "c", "d", "e"} & data.keys()
    store = MetricStore.from_trainer_state(raw)
    assert store.keys() == ["a", "f"]


def test_one_level_of_nesting_is_flattened_and_deeper_is_skipped():
    raw = state([{"step": 1, "rewards": {"acc": 0.5, "deep": {"x": 1.0}, "s": "2"}}])
    data = parse_trainer_state(raw).records[0].data
    assert data["rewards/acc"] == 0.5 and data["rewards/s"] == 2.0
    assert not any("deep" in k for k in data)
    assert MetricStore.from_trainer_state(raw).keys() == ["rewards/acc", "rewards/s"]


def test_missing_step_is_previous_plus_one_with_a_warning():
    parsed = parse_trainer_state(state([{"step": 5, "loss": 1.0}, {"loss": 0.9}, {"step": "x", "loss": 0.8}]))
    assert [r.step for r in parsed.records] == [5, 6, 7]
    assert any("no usable step" in w for w in parsed.warnings)


def test_repeated_steps_keep_the_last_value_of_each_key():
    parsed = parse_trainer_state(state([
        {"step": 1, "loss": 1.0, "lr": 0.1},
        {"step": 1, "loss": 0.5},
    ]))
    assert len(parsed.records) == 1
    assert parsed.records[0].data["loss"] == 0.5 and parsed.records[0].data["lr"] == 0.1
    assert parsed.warnings


def test_a_resumed_log_rewinds_to_the_step_it_went_back_to():
    history = [{"step": s, "loss": float(s)} for s in (1, 2, 3, 4, 5)]
    history.append({"step": 4, "eval_loss": 9.0})
    history += [{"step": s, "loss": s + 0.5} for s in (3, 4, 5, 6)]
    parsed = parse_trainer_state(state(history))
    assert [(r.step, r.data.get("loss")) for r in parsed.records if r.kind == journal.METRICS] == \
        [(1, 1.0), (2, 2.0), (3, 3.5), (4, 4.5), (5, 5.5), (6, 6.5)]
    assert not [r for r in parsed.records if r.kind == journal.EVAL]  # logged before the resume
    assert any("resumed" in w for w in parsed.warnings)
    steps, values = MetricStore.from_parsed(parsed).series("loss")
    assert steps.tolist() == [1, 2, 3, 4, 5, 6]
    assert values.tolist() == [1.0, 2.0, 3.5, 4.5, 5.5, 6.5]


def test_a_mixed_train_and_eval_entry_is_split():
    records = parse_trainer_state(state([{"step": 3, "loss": 1.0, "eval_loss": 2.0, "epoch": 0.5}])).records
    assert [(r.kind, r.step) for r in records] == [(journal.METRICS, 3), (journal.EVAL, 3)]
    assert records[0].data == {"epoch": 0.5, "loss": 1.0}
    assert records[1].data == {"epoch": 0.5, "eval_loss": 2.0}


@pytest.mark.parametrize("raw", [b"\xef\xbb\xbf" + state([{"step": 1, "loss": 1.0}]),
                                 "\ufeff" + state([{"step": 1, "loss": 1.0}]).decode()])
def test_a_byte_order_mark_is_skipped(raw):
    assert parse_trainer_state(raw).records[0].data["loss"] == 1.0


@pytest.mark.parametrize("raw", [b"", b"  \n", b""])
def test_an_empty_file_names_itself_and_the_checkpoint_hint(raw):
    with pytest.raises(CockpitError, match=r"checkpoint-7/trainer_state\.json.*empty.*previous checkpoint"):
        parse_trainer_state(raw, source="checkpoint-7/trainer_state.json")


def test_a_file_cut_off_mid_write_is_called_incomplete():
    full = (FIXTURES / "trl_sft_token_accuracy.json").read_bytes()
    with pytest.raises(CockpitError) as err:
        parse_trainer_state(full[: len(full) // 2], source="out/trainer_state.json")
    msg = str(err.value)
    assert "out/trainer_state.json" in msg and "incomplete" in msg and "non-atomically" in msg
    assert "\n" not in msg


@pytest.mark.parametrize("raw, needle", [
    (b'{"log_history": {"step": 1}}', "log_history is a dict"),
    (b'{"global_step": 3}', "no log_history"),
    (b"[1, 2]", "expected a JSON object"),
    (b'"text"', "expected a JSON object"),
    (b"\xff\xfe\x00garbage", "trainer_state"),
])
def test_wrong_shapes_are_one_clear_line(raw, needle):
    with pytest.raises(CockpitError, match=needle):
        parse_trainer_state(raw)


def test_deep_nesting_does_not_crash():
    deep = b"[" * 100_000 + b"]" * 100_000
    ok = b'{"log_history": [{"step": 1, "loss": 1.0, "x": ' + deep + b"}]}"
    # orjson < 3.9 parses any depth; newer orjson stops at 1024 levels and the stdlib parser
    # then recurses too deep: either the entry is salvaged or it is one clear line.
    try:
        assert parse_trainer_state(ok).records[0].data == {"epoch": None, "loss": 1.0}
    except CockpitError as exc:
        assert "nested too deeply" in str(exc)
    # a bare NaN plus "NaN" inside a string send the file to the stdlib parser, which recurses
    slow = b'{"note": "NaN", "log_history": [{"step": 1, "a": NaN, "x": ' + deep + b"}]}"
    with pytest.raises(CockpitError, match="nested too deeply"):
        parse_trainer_state(slow)
    nested = {"v": 1.0}
    for _ in range(50):
        nested = {"n": nested}
    parsed = parse_trainer_state(state([{"step": 1, "loss": 1.0, "deep": nested}]))
    assert parsed.records[0].data == {"epoch": None, "loss": 1.0}


def test_huge_width_does_not_crash():
    entry = {f"k{i}": float(i) for i in range(20_000)}
    entry["step"] = 1
    store = MetricStore.from_trainer_state(state([entry]))
    assert 0 < len(store) <= 20_000
    assert store.latest("k0") == 0.0


def test_non_object_entries_are_skipped_with_a_warning():
    parsed = parse_trainer_state(state([1, "x", None, {"step": 2, "loss": 1.0}]))
    assert [r.step for r in parsed.records] == [2]
    assert parsed.warnings


def test_header_fields_are_read_tolerantly():
    parsed = parse_trainer_state(state([], global_step="12", max_steps=12.0, best_metric="0.3",
                                       best_model_checkpoint=5, should_training_stop=True))
    assert parsed.global_step == 12 and parsed.max_steps == 12
    assert parsed.best_metric == 0.3 and parsed.best_model_checkpoint is None
    assert parsed.is_finished and parsed.records == []


# -- properties --------------------------------------------------------------------------------

_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=8),
    st.sampled_from(["0.5", "nan", "-Infinity", "1e999", "1_0", " 2 "]),
)
_json = st.recursive(_scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=6), inner, max_size=4)),
    max_leaves=20)
_keys = st.sampled_from(["loss", "eval_loss", "lr", "train_loss", "train_runtime", "rewards",
                         "step", "epoch", "eval_acc", "x/y"])
_entry = st.dictionaries(_keys, st.one_of(_scalars, st.dictionaries(st.sampled_from(["a", "b"]), _scalars,
                                                                    max_size=2)), max_size=6)
_steps = st.one_of(st.none(), st.integers(min_value=-3, max_value=12), st.just("4"), st.just(2.0))


def parsed_raw_entries(history):
    return [e for e in history if isinstance(e, dict)]


def _filled_steps(history):
    """The parser's rule for missing steps: the previous step + 1."""
    out, prev = [], 0
    for entry in parsed_raw_entries(history):
        step = to_int(entry.get("step"))
        prev = prev + 1 if step is None else step
        out.append(prev)
    return out


def _dumps(obj) -> bytes:
    return json.dumps(obj, allow_nan=True).encode()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=200))
def test_arbitrary_bytes_raise_nothing_but_cockpit_error(raw):
    try:
        parse_trainer_state(raw)
    except CockpitError:
        pass


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_json)
def test_arbitrary_json_raises_nothing_but_cockpit_error(obj):
    for raw in (_dumps(obj), _dumps({"log_history": obj}), _dumps({"log_history": [obj]})):
        try:
            MetricStore.from_parsed(parse_trainer_state(raw))
        except CockpitError:
            pass


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(_steps, _entry), max_size=25))
def test_records_and_the_columnar_store_always_agree(items):
    """Whatever the log holds, the store built column-wise equals one built record by record
    and one built with add_many: replay and live show the same thing."""
    history = []
    for step, entry in items:
        entry = dict(entry)
        entry.pop("step", None)
        if step is not None:
            entry["step"] = step
        history.append(entry)
    parsed = parse_trainer_state(_dumps({"log_history": history}))
    columnar = MetricStore.from_parsed(parsed)
    one_by_one = MetricStore()
    for record in parsed.records:
        one_by_one.add(record)
    assert_same_store(columnar, one_by_one)
    assert_same_store(columnar, MetricStore.from_records(parsed.records))
    # ...and both equal feeding the raw entries one by one, as a live journal would
    raw = MetricStore()
    for entry, step in zip(parsed_raw_entries(history), _filled_steps(history), strict=False):
        data = metric_values(entry)
        if is_summary(entry):
            data["summary"] = True
        raw.add(journal.Record(journal.METRICS, data, step=step))
    assert_same_store(columnar, raw)
    for key in columnar.keys():
        steps, _ = columnar.series(key)
        assert np.all(np.diff(steps) > 0)
