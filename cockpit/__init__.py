"""cockpit: a terminal cockpit for Hugging Face TRL training."""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

__all__ = ["CockpitCallback", "__version__"]


def __getattr__(name: str) -> Any:
    """`from cockpit import CockpitCallback` loads transformers only when asked for: importing
    cockpit itself (the viewer, the supervisor) stays light."""
    if name == "CockpitCallback":
        from cockpit.hook.public import PublicCockpitCallback

        return PublicCockpitCallback
    raise AttributeError(f"module 'cockpit' has no attribute {name!r}")
