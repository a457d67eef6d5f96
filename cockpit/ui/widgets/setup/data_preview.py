"""The first rows of a local dataset and whether its columns fit the chosen trainer.

`inspect_data` reads the disk (and may write the demo datasets on first use), so
`DataPreview.check` runs it in a worker and shows the `DataReport` only if the form still names
that data when it comes back.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.table import Table
from rich.text import Text
from textual import work
from textual.message import Message
from textual.widgets import Static

from cockpit.config import datasets as ds
from cockpit.config.draft import Draft
from cockpit.errors import CockpitError
from cockpit.trainers.registry import Registry, TrainerSpec
from cockpit.ui.text import fold
from cockpit.ui.widgets.setup.catalogue import COLUMNS_FIELD, REWARDS_FIELD, SPLIT_FIELD
from cockpit.ui.widgets.setup.values import UNSET

PREVIEW_ROWS = 3
CELL_WIDTH = 60


@dataclass
class DataReport:
    """What the data section shows: rows, and the column check (`fits` None when unknown)."""

    where: str = ""
    columns: list[str] = field(default_factory=list)
    rows: list[dict[str, Any]] = field(default_factory=list)
    fits: bool | None = None
    message: str = ""


def resolve_name(name: str) -> str:
    """`demo:data/x` -> the demo folder (written on first use); anything else unchanged."""
    from cockpit import demo

    if name.startswith(demo.DEMO_PREFIX):
        root = demo.demo_dir()
        demo.ensure_datasets(root)
        return str(demo.demo_path(name, root))
    return name


def inspect_data(name: str, split: str, renames: dict[str, str], spec: TrainerSpec | None,
                 config: str | None = None, needs: dict[str, list[str]] | None = None) -> DataReport:
    """The data section's view of `config.datasets.inspect`, the same check validation runs;
    `needs`: column → the reward functions that read it."""
    if not name:
        return DataReport(message="no dataset yet: a hub id, a local folder or a .jsonl/.json/"
                                  ".parquet/.csv file (demo:data/<format> for the offline demo)")
    try:
        found = ds.inspect(resolve_name(name), config=config, split=split or "train", renames=renames,
                           formats=spec.data_formats if spec else None, trainer=spec.name if spec else None,
                           rows=PREVIEW_ROWS, needs=needs, shown_as=name)
    except CockpitError as exc:
        return DataReport(where=name, fits=False, message=str(exc))
    if found.kind == "hub" and found.problem:
        return DataReport(where=name, fits=False, message=found.problem)
    if found.kind == "hub":
        return DataReport(where=name, message=f"{name}: a hub dataset — its columns are checked when the "
                                              "run loads it")
    report = DataReport(where=str(found.path or name), columns=found.columns, rows=found.rows,
                        fits=found.fits, message=found.problem or "")
    if found.problem:
        return report
    cols = ", ".join(found.columns)
    if spec is None:
        report.message = f"columns: {cols} — pick a trainer to check them"
    elif not spec.data_formats:
        report.message = f"columns {cols} — cockpit does not know what {spec.name} needs"
    else:
        report.message = f"columns {cols} fit {spec.name}" + (
            " and the reward functions" if needs else "")
    return report


class DataPreview(Static):
    """The column check on top, then the first rows as a table (long cells folded)."""

    DEFAULT_CSS = """
    DataPreview {
        height: auto;
        padding: 0 1 0 0;
    }
    DataPreview.-bad {
        color: $text-error;
    }
    """

    @dataclass
    class Inspected(Message):
        """Columns, first rows and the column check of the dataset the form named."""

        key: tuple
        """What the form named when the check started (a newer one makes it stale)."""
        report: DataReport
        """What was found."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("", id=id)
        self.key: tuple | None = None
        """What the last check was asked about; None when the form's data changed since."""

    def forget(self) -> None:
        """The form's data changed: the next `check` is needed."""
        self.key = None

    def check(self, draft: Draft, spec: TrainerSpec | None, registry: Registry | None) -> None:
        """Check the dataset the draft names (in a worker), as validation sees it: its split,
        renames, config, the trainer's formats and the columns its reward functions read."""
        name = draft.get("dataset_name")
        split = draft.get(SPLIT_FIELD.name)
        if split is UNSET:
            split = draft.trl.get("dataset_train_split", "train")
        renames = draft.get(COLUMNS_FIELD.name)
        renames = renames if isinstance(renames, dict) else {}
        config = draft.trl.get("dataset_config")
        rewards: list[str] = []
        if spec is not None and "reward_funcs" in spec.extra_models:
            for source in (draft.get("reward_funcs"), draft.get(REWARDS_FIELD.name)):
                if isinstance(source, (list, str)):
                    rewards += [str(r) for r in ([source] if isinstance(source, str) else source)]
        key = (name, split, tuple(renames.items()), config, spec.name if spec else None, tuple(rewards))
        self.key = key
        self._inspect(key, "" if name is UNSET else str(name), str(split), renames, spec, config, rewards,
                      registry.rewards if registry else {})

    @work(thread=True, exclusive=True, group="setup-data", exit_on_error=False)
    def _inspect(self, key: tuple, name: str, split: str, renames: dict[str, str],
                 spec: TrainerSpec | None, config: str | None, rewards: list[str],
                 known_rewards: dict[str, Any]) -> None:
        try:
            from cockpit.config.rewards import needed_columns

            needs = needed_columns(rewards, known_rewards)
            report = inspect_data(name, split, renames, spec, config, needs=needs)
        except Exception as exc:  # noqa: BLE001 - a preview problem is shown, never a crash
            report = DataReport(where=name, fits=None, message=f"cannot preview {name}: {exc}")
        self.post_message(self.Inspected(key, report))

    def on_data_preview_inspected(self, message: Inspected) -> None:
        message.stop()
        if message.key == self.key:
            self.show(message.report)

    def show(self, report: DataReport) -> None:
        self.set_class(report.fits is False, "-bad")
        icon = {True: "✓ ", False: "✗ ", None: ""}[report.fits]
        head = Text(icon + report.message, style="bold" if report.fits is not None else "dim")
        if not report.rows:
            self.update(head)
            return
        table = Table(show_edge=False, expand=True, pad_edge=False, show_lines=False,
                      title=Text(f"first {len(report.rows)} rows of {Path(report.where).name}"),
                      title_justify="left", title_style="dim")
        for col in report.columns:
            table.add_column(Text(col), overflow="fold", ratio=1)  # a str header is markup
        for row in report.rows:
            table.add_row(*[Text(fold(_cell(row.get(c)), CELL_WIDTH)) for c in report.columns])
        from rich.console import Group

        self.update(Group(head, table))


def _cell(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(value)
