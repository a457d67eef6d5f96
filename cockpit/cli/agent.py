"""`cockpit mcp`: the runs folder for an agent, over MCP (cockpit/agent). The SDK is the `mcp`
extra: a light install without it is told so in one line."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from cockpit.cli.common import runs_dir as _runs_dir
from cockpit.errors import CockpitError

DEFAULT_PORT = 8765


def cmd_mcp(args: argparse.Namespace) -> int:
    if args.skills:
        from cockpit.agent import skills_text

        sys.stdout.write(skills_text())
        return 0
    try:
        import mcp.server.mcpserver  # noqa: F401 - the extra's presence, said in one line when absent
    except ImportError:
        raise CockpitError("`cockpit mcp` needs the MCP SDK: pip install 'cockpit[mcp]' (or pip install mcp)") from None
    if not 1 <= args.port <= 65535:
        raise CockpitError(f"--port {args.port}: give a port from 1 to 65535")
    runs = _runs_dir(args)
    if args.http:
        from cockpit.agent.server import serve_http

        return serve_http(runs, port=args.port, host=args.host, allow_actions=args.allow_actions)
    from cockpit.agent.server import serve_stdio

    return serve_stdio(runs, allow_actions=args.allow_actions)


def add_parsers(sub: Any) -> None:
    m = sub.add_parser("mcp", help="serve the runs to an AI agent over MCP (stdio; read-only unless "
                                   "--allow-actions)")
    m.add_argument("--allow-actions", action="store_true",
                   help="also offer stop_and_save, resume and sample (each written in the run's journal as an "
                        "agent's; one a run every 30 s); without it the agent can only read")
    m.add_argument("--http", action="store_true",
                   help="serve streamable HTTP on loopback instead of stdio; each request needs the token "
                        "(Authorization: Bearer TOKEN): $COCKPIT_MCP_TOKEN, else a new one, printed")
    m.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"with --http: the port (default {DEFAULT_PORT})")
    m.add_argument("--host", default="127.0.0.1", help="with --http: a loopback address (default 127.0.0.1)")
    m.add_argument("--skills", action="store_true",
                   help="print the guide for agents (the tools, what each returns, how to diagnose a run) and exit")
    m.add_argument("--runs-dir", dest="runs_dir", default=argparse.SUPPRESS,
                   help="folder of runs (default: $COCKPIT_RUNS_DIR or ./runs)")
    m.set_defaults(func=cmd_mcp)
