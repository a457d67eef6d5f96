"""A run being set up, before it is a preset or a run: what the setup form holds, with no Textual.

Two kinds of draft share it. A *preset* draft is a trainer, flat TRL keys and the `cockpit:`
section (launch target included); only what the user set differs from TRL's defaults, so a preset
opened for editing comes back as it was written. A *command* draft is any training command line
and its working folder, run unchanged in script mode (`cockpit run -- COMMAND`).

The draft knows what the user typed that is not a value (`input_errors`), what validation said
about exactly this content (`problems`, `warnings`, `valid_key`: a verdict on older content is
ignored), which form field each problem is about (`field_problems`, from
`validate.Problem.field`), and whether it differs from the file it was opened from or saved to
(`dirty`). The screen is a view of it; tests drive it without a terminal.
"""

from __future__ import annotations

import copy
import shlex
from collections.abc import Container, Iterable
from pathlib import Path
from typing import Any

from cockpit.config.presets import Preset, dump_yaml
from cockpit.config.validate import Problem


class Unset:
    """The field is left at TRL's default: its key is not written into the preset."""

    _instance: Unset | None = None

    def __new__(cls) -> Unset:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNSET"

    def __bool__(self) -> bool:
        return False


UNSET = Unset()

PRESET, COMMAND = "preset", "command"
LAUNCHER = "cockpit.launcher"
TODO_PREFIXES = ("no model:", "no data:", "no command")
"""Problems that only mean "not filled in yet": said as the next step, not as a mistake."""
FIELD_ALIASES = {
    "teacher_model_name_or_path": ("teacher_model_name_or_path", "cockpit.models.teacher_model"),
    "teacher model": ("teacher_model_name_or_path", "cockpit.models.teacher_model"),
    "reward_funcs": ("reward_funcs", "cockpit.reward_funcs"),
    "cockpit.launcher": ("cockpit.launcher.kind",),
    "cockpit.launcher.config_file": ("cockpit.launcher.config",),
}
"""Where a problem goes when the form has no field of the problem's own name."""


def is_todo(message: str) -> bool:
    return message.startswith(TODO_PREFIXES)


class Draft:
    def __init__(self, preset: Preset | None = None, *, cwd: Path | None = None) -> None:
        self.mode = PRESET
        self.trainer: str | None = None
        """The picked trainer (None until one is picked: there is no preset before)."""
        self.source: Path | None = preset.source if preset is not None else None
        self.trl: dict[str, Any] = dict(preset.trl) if preset is not None else {}
        self.cockpit: dict[str, Any] = copy.deepcopy(preset.cockpit) if preset is not None else {}
        self.command = ""
        """The command line of a command draft, as typed (shell quoting)."""
        self.cwd = str(cwd or Path.cwd())
        self.name = ""
        """The run's name; empty: from the preset or the command (`train.py` -> train)."""
        self.order: dict[str, int] = {}
        """Key -> position: the preset's keys come out in the order of the form."""
        self.input_errors: dict[str, str] = {}
        """Field -> why what was typed is not a value of its type."""
        self.problems: list[Problem] = []
        self.warnings: list[str] = []
        self.valid_key: str | None = None
        """The content (`key()`) the last clean verdict was about."""
        self.checked_key: str | None = None
        """The content the last verdict, clean or not, was about."""
        self.saved_as: str | None = str(self.source) if self.source else None
        self.dirty = False
        """The form differs from the preset file it was opened from or saved to."""

    # -- values --------------------------------------------------------------------------------

    def get(self, name: str) -> Any:
        """What the draft holds for a form field (UNSET when left to the default). Fields of the
        `cockpit:` section are dotted: `cockpit.launcher.kind`."""
        if name == "command":
            return self.command or UNSET
        if name == "cwd":
            return self.cwd or UNSET
        if name == "name":
            return self.name or UNSET
        if name.startswith("cockpit."):
            target: Any = self.cockpit
            for part in name.split(".")[1:]:
                if not isinstance(target, dict) or part not in target:
                    return UNSET
                target = target[part]
            return target
        return self.trl.get(name, UNSET)

    def set(self, name: str, value: Any) -> None:
        if name in ("command", "cwd", "name"):
            setattr(self, name, "" if value is UNSET else str(value))
            return
        if not name.startswith("cockpit."):
            if value is UNSET:
                self.trl.pop(name, None)
            else:
                self.trl[name] = value
            return
        parts = name.split(".")[1:]
        chain = [self.cockpit]
        for part in parts[:-1]:
            nxt = chain[-1].get(part)
            if not isinstance(nxt, dict):
                if value is UNSET:
                    return
                nxt = chain[-1][part] = {}
            chain.append(nxt)
        if value is UNSET:
            chain[-1].pop(parts[-1], None)
            for parent, part, child in reversed(list(zip(chain, parts, chain[1:], strict=False))):
                if not child:
                    parent.pop(part, None)
        else:
            chain[-1][parts[-1]] = value

    def edit(self, name: str, value: Any, error: str | None = None) -> None:
        """The user changed a field: `error` when the text is not a value (then `value` is UNSET)."""
        if error:
            self.input_errors[name] = error
        else:
            self.input_errors.pop(name, None)
        self.set(name, value)
        self.dirty = True
        self.valid_key = None

    @property
    def launcher(self) -> dict[str, Any]:
        launcher = self.cockpit.get("launcher")
        return launcher if isinstance(launcher, dict) else {}

    @property
    def launcher_kind(self) -> str:
        launcher = self.launcher
        if launcher.get("kind"):
            return str(launcher["kind"])
        n = launcher.get("num_processes", 1)
        many = isinstance(n, int) and not isinstance(n, bool) and n > 1
        return "accelerate" if many or launcher.get("config") else "python"

    # -- the trainer ---------------------------------------------------------------------------

    def use_command(self) -> None:
        """Run a command line instead of a trainer's form (the values of both are kept)."""
        if self.mode != COMMAND:
            self.mode = COMMAND
            self.dirty = True
            self.valid_key = None

    def pick_trainer(self, name: str, known: Container[str] | None = None) -> list[str]:
        """Use trainer `name`; with `known` (its config keys) the keys it does not take are
        dropped and returned. Without it (a preset being opened) they stay: validation names them."""
        dropped: list[str] = []
        if known is not None:
            dropped = [k for k in self.trl if k not in known]
            for key in dropped:
                del self.trl[key]
            self.dirty = self.dirty or self.mode != PRESET or self.trainer != name
        self.mode = PRESET
        self.trainer = name
        self.valid_key = None
        return dropped

    def set_order(self, names: Iterable[str]) -> None:
        self.order = {}
        for i, name in enumerate(names):
            self.order.setdefault(name, i)

    def preset(self) -> Preset | None:
        """The preset the draft adds up to (None until a trainer is picked, or for a command)."""
        if self.mode != PRESET or self.trainer is None:
            return None
        at = {k: i for i, k in enumerate(self.trl)}
        keys = sorted(self.trl, key=lambda k: (self.order.get(k, len(self.order)), at[k]))
        return Preset(self.trainer, {k: self.trl[k] for k in keys}, copy.deepcopy(self.cockpit), self.source)

    # -- a command -----------------------------------------------------------------------------

    def command_words(self) -> list[str]:
        """The command line split as a shell would; ValueError for an unclosed quote."""
        return shlex.split(self.command)

    def script_launcher(self) -> dict[str, Any] | None:
        """A command keeps its own launcher line; cockpit's launcher only sends it to Slurm."""
        return dict(self.launcher) if self.launcher_kind == "slurm" else None

    def script_yaml(self) -> str:
        """What run.yaml will say about a command (the name as given or from the command)."""
        from cockpit.config.launcher import default_name
        from cockpit.trainers.knowledge import SCRIPT_TRAINER

        try:
            words = self.command_words()
        except ValueError:
            words = self.command.split()
        section: dict[str, Any] = {"name": self.name or default_name(words),
                                   "script": {"command": words, "cwd": self.cwd}}
        if self.script_launcher():
            section["launcher"] = self.script_launcher()
        return dump_yaml({"trainer": SCRIPT_TRAINER, "cockpit": section})

    def command_problems(self) -> list[Problem]:
        """Everything wrong with the command draft, each on its field (cheap: no process runs)."""
        from cockpit.config.launcher import check_command
        from cockpit.errors import CockpitError

        problems: list[Problem] = []
        try:
            words = self.command_words()
        except ValueError as exc:
            return [Problem("command", f"the command line does not parse ({exc}) — close the quote")]
        cwd = Path(self.cwd or ".").expanduser()
        for line in check_command(words, cwd):
            problems.append(Problem("cwd" if line.startswith("working folder") else "command", line))
        if self.launcher_kind not in ("python", "slurm"):
            problems.append(Problem("cockpit.launcher.kind", "a command keeps its own launcher line (torchrun, "
                                    "accelerate launch ...) — pick 'as typed' or Slurm as the launch target"))
        elif self.script_launcher():
            from cockpit.config.launcher import check

            try:
                check(self.script_launcher())
            except CockpitError as exc:
                problems.append(Problem(LAUNCHER, str(exc)))
        return problems

    # -- validation ----------------------------------------------------------------------------

    def key(self) -> str | None:
        """The content a verdict is about: the preset's YAML, or the command's run.yaml."""
        if self.mode == COMMAND:
            return self.script_yaml()
        preset = self.preset()
        return preset.to_yaml() if preset is not None else None

    def accept_verdict(self, key: str | None, problems: list[Problem], warnings: list[str]) -> bool:
        """Take what validation said about `key`; False (and ignored) when the draft has changed
        since (another check is on its way)."""
        if key is None or key != self.key():
            return False
        self.problems = list(problems)
        self.warnings = list(warnings)
        self.checked_key = key
        self.valid_key = key if not problems else None
        return True

    @property
    def checked(self) -> bool:
        """The verdict shown is about the current content."""
        return self.checked_key is not None and self.checked_key == self.key()

    def lines(self) -> list[tuple[str | None, str]]:
        """(field, line) of every problem, one line each (a launcher problem may hold several)."""
        return [(p.field, line) for p in self.problems for line in p.message.splitlines() if line.strip()]

    def field_problems(self, fields: Iterable[str]) -> dict[str, str]:
        """Form field -> the first problem about it (not-filled-in-yet ones aside). A line that
        starts with the name of a field in the form (`cockpit.launcher.num_processes must be ...`)
        is about that field; otherwise the problem's own field, or the field that stands for it
        here (`FIELD_ALIASES`)."""
        names = set(fields)
        out: dict[str, str] = {}
        for field, line in self.lines():
            if is_todo(line):
                continue  # not a mistake: the verdict says it as the next thing to fill in
            target = None
            first = line.split(" ", 1)[0].rstrip(":")
            if first in names:
                target = first
            elif field in names:
                target = field
            else:
                target = next((n for n in FIELD_ALIASES.get(field or "", ()) if n in names), None)
            if target is not None:
                out.setdefault(target, line)
        return out

    def can_launch(self) -> bool:
        key = self.key()
        return (key is not None and not self.input_errors and self.valid_key is not None
                and self.valid_key == key)

    def blocker(self) -> str:
        """Why the draft cannot be launched yet, in one line."""
        if self.mode == PRESET and self.trainer is None:
            return "pick a trainer (or a command) first"
        if self.input_errors:
            name, error = next(iter(self.input_errors.items()))
            return f"{name}: {error}"
        if self.checked and self.problems:
            return self.lines()[0][1]
        return "still checking — try again in a moment"

    # -- saving --------------------------------------------------------------------------------

    def mark_saved(self, path: Path) -> None:
        self.source = path
        self.saved_as = str(path)
        self.dirty = False
