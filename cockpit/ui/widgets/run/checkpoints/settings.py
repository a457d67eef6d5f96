"""The checkpoints tab's generation settings: temperature, max new tokens and seed, each in a
box, checked as the sampler checks them (`launch.sampler.request_problems`, the CLI's too)."""

from __future__ import annotations

from typing import Any

from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import Input, Label

from cockpit.launch import sampler as smp

DEFAULT_MAX_NEW_TOKENS = 64
"""An answer's length when run.yaml's `cockpit.sample` does not say."""
MAX_SEED = 2**32 - 1


def default_max_new_tokens(found: Any) -> Any:
    """run.yaml's `cockpit.sample.max_new_tokens` of the listed run (`found`: a CheckpointSet or
    None), else DEFAULT_MAX_NEW_TOKENS."""
    if found is None:
        return DEFAULT_MAX_NEW_TOKENS
    return smp.sample_settings(found).get("max_new_tokens", DEFAULT_MAX_NEW_TOKENS)


class SampleSettings(Horizontal):
    """What each answer is generated with (a chat's turn too)."""

    def compose(self) -> ComposeResult:
        yield Label("temperature")
        yield Input("0", id="ckpt-temperature", type="number", compact=True,
                    tooltip="0: greedy, the same answer every time; above 0: sampled (the seed decides)")
        yield Label("max tokens")
        yield Input("", id="ckpt-max-new-tokens", type="integer", compact=True,
                    tooltip="The longest answer, in tokens (run.yaml's cockpit.sample.max_new_tokens)")
        yield Label("seed")
        yield Input("0", id="ckpt-seed", type="integer", compact=True,
                    tooltip="Set before each answer: the same seed, the same sampled answer")

    def suggest_max_new_tokens(self, found: Any) -> None:
        """The run's own answer length in the max tokens box, unless something is typed there."""
        box = self.query_one("#ckpt-max-new-tokens", Input)
        box.value = box.value or str(default_max_new_tokens(found))

    def read(self, found: Any) -> dict[str, Any] | None:
        """temperature, max_new_tokens and seed as their boxes say (empty: the default), or None
        after one notification that lists every box with a value that cannot be used."""

        def read(box: str, kind: type, default: object) -> object:
            text = self.query_one(box, Input).value.strip()
            try:
                return kind(text) if text else default
            except ValueError:
                return text

        temperature = read("#ckpt-temperature", float, 0.0)
        max_new_tokens = read("#ckpt-max-new-tokens", int, default_max_new_tokens(found))
        seed = read("#ckpt-seed", int, 0)
        # The sampler's own checks (the CLI's too), in the words of the boxes.
        problems = [p.removeprefix("--").replace("max-new-tokens", "max new tokens", 1)
                    for p in smp.request_problems(max_new_tokens=max_new_tokens, temperature=temperature, prompts=[])]
        if not isinstance(seed, int) or not 0 <= seed <= MAX_SEED:
            problems.append(f"seed {str(seed)[:40]}: give a whole number from 0 to {MAX_SEED:,}")
        if problems:
            self.app.notify("\n".join(problems), title="sampling settings", severity="error", markup=False)
            return None
        return {"temperature": temperature, "max_new_tokens": max_new_tokens, "seed": seed}
