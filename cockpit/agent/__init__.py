"""An agent's seat: the cockpit over MCP (`cockpit mcp`).

`answers` bounds and cleans what goes out (sizes, control characters, numbers as numbers);
`reader` answers the read-only tools from the same read paths as the CLI (`runs --json`,
`findings --json`, `checkpoints`, `export --completions`, `replay`); `actions` carries out
stop-and-save, resume and sampling, only when `--allow-actions` was given; `server` is the MCP
server itself, on the official `mcp` SDK (the `mcp` extra), over stdio or streamable HTTP.
Nothing here imports torch or TRL, and only `server` imports the SDK.
"""

from __future__ import annotations

from importlib.resources import files

SKILLS = "SKILL.md"
"""The guide for agents (`cockpit mcp --skills`): the tools, what each returns, how to diagnose a run."""


def skills_text() -> str:
    return files(__package__).joinpath(SKILLS).read_text(encoding="utf-8")
