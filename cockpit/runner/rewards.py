"""Reward functions cockpit ships, usable by name in `cockpit.reward_funcs` or as dotted paths
(`cockpit.runner.rewards.arith_reward`) in TRL's own `reward_funcs` key.

TRL calls each with the completions and every dataset column as keyword arguments,
so each takes `**kwargs` (a common trap).
"""

from __future__ import annotations

import re
from typing import Any

_OPS = {"plus": lambda a, b: a + b, "minus": lambda a, b: a - b, "times": lambda a, b: a * b}
_QUESTION = re.compile(r"(-?\d+)\s+(plus|minus|times)\s+(-?\d+)")


def _text(x: Any) -> str:
    if isinstance(x, list):  # conversational: the last message's content
        return str(x[-1].get("content", "")) if x and isinstance(x[-1], dict) else " ".join(map(str, x))
    return str(x)


def arith_reward(completions: list[Any], prompts: list[Any] | None = None, **kwargs: Any) -> list[float]:
    """1.0 for the right answer to 'What is A plus B?', partial credit for answering with a number.

    The partial credit gives even an untrained model rewards that vary, so GRPO's
    advantages are not all zero on the demo.
    """
    out = []
    for i, completion in enumerate(completions):
        text = _text(completion)
        prompt = _text(prompts[i]) if prompts else ""
        m = _QUESTION.search(prompt)
        numbers = re.findall(r"-?\d+", text)
        score = 0.0
        if numbers:
            score += 0.2
            if m and int(numbers[0]) == _OPS[m.group(2)](int(m.group(1)), int(m.group(3))):
                score += 1.0
        digits = sum(c.isdigit() for c in text)
        score += 0.3 * digits / max(1, len(text))
        out.append(round(score, 4))
    return out


def length_reward(completions: list[Any], target_chars: int = 40, **kwargs: Any) -> list[float]:
    """1.0 at `target_chars` characters, falling off linearly: a simple shaping reward."""
    out = []
    for completion in completions:
        n = len(_text(completion))
        out.append(max(0.0, 1.0 - abs(n - target_chars) / target_chars))
    return out
