"""The checkpoints tab's table: one row a checkpoint (and the base model), a script's several
Trainers each under a row of its own, the picked rows marked A and B, and the trainer's key and
eval metric at each checkpoint, named for what they are."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.widgets import DataTable

from cockpit.launch import sampler as smp
from cockpit.ui.text import fold_tail, num, printable

LOADING_ROW = "loading"
"""The table's one row, not a checkpoint: until the first listing arrives, or when it found none."""
TRAINER_ROW = "trainer:"
"""A script with several Trainers: the row that heads each one's checkpoints (`trainer:N`), not a
checkpoint. An earlier Trainer's checkpoint rows are keyed as `--checkpoint` takes them
(`launch.sampler.trainer_key`: `t1:checkpoint-8`, N from 1)."""


def pickable(key: str) -> bool:
    return key != LOADING_ROW and not key.startswith(TRAINER_ROW)


METRIC_LABELS = {"reward": "mean reward", "objective/rlhf_reward": "rlhf reward", "rewards/margins": "margin",
                 "train_loss": "loss"}


def metric_label(key: str) -> str:
    """A logged metric's name as a column says it: `reward` -> `mean reward`, `eval_wer` -> `eval wer`."""
    return METRIC_LABELS.get(key, key.replace("_", " "))


class CheckpointTable(DataTable):
    """The listing's rows; the pane says what is listed (`fill`) and what is picked."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, cursor_type="row", zebra_stripes=True)
        self._metric_labels: tuple[str, str] | None = None

    def show_loading(self) -> None:
        """The one row before the first listing arrives."""
        self.set_metric_columns(None, None)
        self.add_row("", Text("reading the checkpoints…", style="dim italic"), key=LOADING_ROW)

    def set_metric_columns(self, key_metric: str | None, eval_metric: str | None) -> None:
        """The table's columns: the trainer's key metric at each step (mean reward, the DPO
        margin, else loss) and its eval metric, named for what they are."""
        labels = (metric_label(key_metric or "loss"), metric_label(eval_metric or "eval_loss"))
        if labels == self._metric_labels:
            return
        self._metric_labels = labels
        self.clear(columns=True)
        self.add_columns(" ", "checkpoint", *labels, "size", "state", "what it is")

    def fill(self, found: Any, earlier: list[Any], picked: list[str]) -> None:
        """The rows of `found` (a `metrics.checkpoints.CheckpointSet`) under those of a script's
        `earlier` Trainers, the `picked` keys marked A and B; the cursor stays where it was."""
        cursor = self.cursor_row
        self.set_metric_columns(found.key_metric, found.eval_metric)
        self.clear()
        trainers = len(earlier) + 1
        for i, one in enumerate(earlier):
            self._trainer_row(i, trainers, one)
            self._checkpoint_rows(one, i + 1, picked)
        if earlier:
            self._trainer_row(trainers - 1, trainers, found)
        if found.base_model:
            self.add_row(_mark("base", picked), "base model", "", "", "", "",
                         Text(fold_tail(f"what training started from: {found.base_model}", 60)), key="base")
        self._checkpoint_rows(found, None, picked)
        if not self.row_count:  # an empty state that says where it looked, not a blank table
            where = fold_tail(str(found.output_dir), 60)
            self.add_row("", Text(f"no checkpoints {'yet ' if found.live else ''}in {where}", style="dim italic"),
                         key=LOADING_ROW)
        if self.row_count:
            self.move_cursor(row=min(max(cursor, 0), self.row_count - 1))

    def key_at_cursor(self) -> str | None:
        """The highlighted row's key (None: no rows)."""
        if not self.row_count:
            return None
        return self.coordinate_to_cell_key(self.cursor_coordinate).row_key.value

    def _trainer_row(self, i: int, trainers: int, one: Any) -> None:
        self.add_row(
            "", Text(f"Trainer {i + 1} of {trainers}", style="bold"), "", "", "", "",
            Text(fold_tail(f"its output folder: {one.output_dir}", 60), style="dim"), key=f"{TRAINER_ROW}{i}")

    def _checkpoint_rows(self, found: Any, trainer: int | None, picked: list[str]) -> None:
        """One Trainer's rows: the last one's keyed by the checkpoint's name, an earlier one's by its
        `tN:` key."""
        from cockpit.formats import fmt_size

        for c in found.checkpoints:
            # Short: the column is the last before "what it is" at the table's edge (`complet` at 100x30).
            state = "✓" if c.complete else ("writing…" if c.being_written else "incomplete")
            # The kind first, whole; a long base path gives way from its start (its end names it).
            kind = {"lora": f"LoRA on {fold_tail(c.base, 28) if c.base else 'the base model'}",
                    "full": "full model"}.get(c.kind, "unknown (no config.json)")
            key = c.name if trainer is None else smp.trainer_key(trainer, c.name)
            # Text, not str: a DataTable reads a str cell as markup, and paths are data
            self.add_row(_mark(key, picked), Text(printable(c.name)), num(c.key_value), num(c.eval_value),
                         fmt_size(c.size), state, Text(fold_tail(kind, 60)), key=key)


def _mark(key: str, picked: list[str]) -> str:
    return {0: "A", 1: "B"}.get(picked.index(key), "") if key in picked else ""
