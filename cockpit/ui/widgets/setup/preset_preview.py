"""The preset the form adds up to, as YAML, and the command lines that would run it: `cockpit
run`, TRL's own command, and how the launch target starts the trainer (torchrun, accelerate
launch, the job's #SBATCH lines); for a command, where and how it runs."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from textual.content import Content
from textual.widgets import Static

from cockpit.config.presets import Preset


def yaml_content(text: str) -> Content:
    """YAML with its top-level keys picked out (theme colours, so every theme works)."""
    out: list[Content] = []
    for line in text.splitlines():
        key, sep, rest = line.partition(":")
        if sep and key and not key.startswith((" ", "-", "#")):
            out.append(Content.assemble((key, "bold $accent"), ":" + rest))
        elif sep and key.strip() and not key.strip().startswith("-"):
            out.append(Content.assemble((key, "$accent"), ":" + rest))
        else:
            out.append(Content(line))
    return Content("\n").join(out)


def command_lines(preset: Preset, cli_command: str | None, saved_as: str | None) -> list[str]:
    """`cockpit run <file>`, and TRL's own command when the trainer has one."""
    target = saved_as or f"{preset.name}.yaml"
    lines = [f"$ {shlex.join(['cockpit', 'run', target])}"]
    if not saved_as:
        lines[0] += "   (save it first: ctrl+s)"
    if cli_command:
        lines.append(f"$ trl {cli_command} --config RUN/trl.yaml   (written at launch)")
    launcher = preset.cockpit.get("launcher")
    if isinstance(launcher, dict) and launcher:
        lines += launcher_lines(launcher, ["-m", "cockpit.runner", "RUN"])
    return lines


def launcher_lines(launcher: dict[str, Any], task: list[str]) -> list[str]:
    """How the launch target starts `task` (nothing when the launcher has problems: validation
    names them on their fields)."""
    from cockpit.config.launcher import check as check_launcher
    from cockpit.errors import CockpitError
    from cockpit.launch import launchers

    try:
        spec = check_launcher(launcher)
        if spec.kind == "slurm":
            from cockpit.launch import slurm

            script = slurm.sbatch_script(run_dir=Path("RUN"), chdir=Path("RUN"), job_name="NAME",
                                         launcher=spec, task=task,
                                         distributed=launchers.slurm_engine(spec), env={})
            skip = ("--job-name", "--output", "--error", "--open-mode", "--chdir", "--ntasks")
            options = [ln.removeprefix("#SBATCH ") for ln in script.splitlines()
                       if ln.startswith("#SBATCH") and not ln.removeprefix("#SBATCH ").startswith(skip)]
            return ["launch: sbatch RUN/job.sh   " + " ".join(options)]
        if spec.kind == "python":
            return []
        argv = launchers.runner_argv(Path("RUN"), spec)
    except (CockpitError, OSError):
        return []
    argv[0] = Path(argv[0]).name
    return ["launch: " + shlex.join(argv)]


def script_lines(words: list[str], cwd: str, name: str, launcher: dict[str, Any] | None) -> list[str]:
    """`cockpit run -- COMMAND` from its folder, and the job's options when it goes to Slurm."""
    args = ["cockpit", "run"] + (["--name", name] if name else [])
    for key, value in (launcher or {}).items():
        args += ["--launcher", f"{key}={value}"]
    lines = [f"$ cd {shlex.quote(cwd)}", "$ " + shlex.join([*args, "--", *words])]
    if launcher:
        lines += launcher_lines(launcher, words)
    return lines


class _Preview(Static):
    """Shown again on every change of the form (each keystroke): updated only when what it says
    changed, and the screen laid out again only when that changed its height."""

    _text: str | None = None

    def _put(self, text: str, content: Content) -> None:
        if text == self._text:
            return
        self._text = text
        size = self.content_size  # 0 × 0 until laid out (or while hidden)
        self.update(content, layout=False)
        if not size.width or self.get_content_height(size, self.app.size, size.width) != size.height:
            self.refresh(layout=True)


class PresetPreview(_Preview):
    """Updated on every change of the form (it is cheap: a dict to YAML)."""

    DEFAULT_CSS = """
    PresetPreview {
        height: auto;
        padding: 0 1;
    }
    """

    def show(self, preset: Preset | None) -> None:
        if preset is None:
            self._put("\0", Content.from_markup("[dim]pick a trainer (or a command) to start[/]"))  # no YAML has a NUL
            return
        self.show_yaml(preset.to_yaml())

    def show_yaml(self, text: str) -> None:
        text = text.rstrip()
        self._put(text, yaml_content(text))


class CommandPreview(_Preview):
    DEFAULT_CSS = """
    CommandPreview {
        height: auto;
        padding: 0 1;
        color: $text-muted;
    }
    """

    def show(self, preset: Preset | None, cli_command: str | None = None,
             saved_as: str | None = None) -> None:
        if preset is None:
            self.show_lines([])
            return
        # Literal: commands hold whatever was typed into the form.
        self.show_lines(command_lines(preset, cli_command, saved_as))

    def show_lines(self, lines: list[str]) -> None:
        text = "\n".join(lines)
        self._put(text, Content(text))
