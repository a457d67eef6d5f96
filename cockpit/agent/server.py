"""`cockpit mcp`: the cockpit as an MCP server, on the official `mcp` SDK (`MCPServer`).

Read-only tools by default; the action tools are registered (and so listed) only with
`allow_actions`. Every answer is one text block of compact JSON, bounded by `answers.bound`
(it says in `cut` what was left out); a problem is one line (`is_error`), as the CLI says it.
The tools run on the SDK's worker threads: one lock keeps the reader's caches to one call at a
time (a sampling request does not hold it).

Over stdio (what local agents start) or streamable HTTP bound to loopback, where every request
must carry the token (`Authorization: Bearer TOKEN`), compared in constant time, as
`cockpit serve` locks its server.

This is the one module that imports the SDK (at its top: the tools' annotations name its types);
`cockpit mcp` imports it only once it has found the SDK installed.
"""

from __future__ import annotations

import hmac
import re
import secrets
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field

from cockpit.agent.answers import bound, dumps, text
from cockpit.agent.reader import Reader
from cockpit.errors import CockpitError, failure, one_line

LOOPBACK = ("127.0.0.1", "localhost", "::1")

INSTRUCTIONS = """The cockpit's view of Hugging Face TRL training runs (SFT, DPO, GRPO, PPO, any
transformers Trainer). Start with `runs`, then `summary` and `findings` for one run. `findings`
says what is wrong with evidence and since which step; `completions` shows the model's answers at
that step (best/worst by reward, search); `metrics` gives a series downsampled with spikes kept.
Answers are JSON; a `cut` list says what was left out to keep them small."""

RunRef = Annotated[str, Field(description="a run's name or unique name prefix (the `runs` tool lists them), or a "
                                          "run folder's path", min_length=1, max_length=4096)]
PathRef = Annotated[str, Field(description="a run's name or prefix, a run folder, an output_dir, a checkpoint-N "
                                           "folder or a trainer_state.json path", min_length=1, max_length=4096)]


def _answer(fn: Callable[[], dict[str, Any]], lock: threading.Lock | None) -> str:
    try:
        if lock is None:
            doc = fn()
        else:
            with lock:
                doc = fn()
    except CockpitError as exc:
        raise ToolError(text(one_line(str(exc), 1000))) from None
    except OSError as exc:
        raise ToolError(text(one_line(f"{exc.filename or ''}: {exc.strerror or exc}", 1000))) from None
    except Exception as exc:  # noqa: BLE001 - one line for the agent, never a traceback
        raise ToolError(text(f"{failure(exc)} — this is a bug in cockpit")) from None
    return dumps(bound(doc)).decode()


_PYDANTIC_TAIL = re.compile(r" *\[type=.*$")


def one_line_error(said: str) -> str:
    """An error the SDK said over several lines (pydantic's, for arguments outside their schema:
    "1 validation error for runsArguments / limit / Input should be ≤ 100 [type=…] / For further
    information visit …") as one line: "…: limit: Input should be less than or equal to 100"."""
    lines = said.splitlines()
    if len(lines) < 2:
        return said
    out, field = [lines[0].strip()], ""
    for line in lines[1:]:
        if not line.strip() or line.strip().startswith("For further information"):
            continue
        if line[:1].isspace():
            said_there = _PYDANTIC_TAIL.sub("", line.strip())
            out.append(f"{field}: {said_there}" if field else said_there)
        else:
            field = line.strip()
    return text(one_line(" — ".join(out), 1000))


async def _one_line_errors(ctx: Any, call_next: Any) -> Any:
    """Middleware: every tool error the client gets is one line (`one_line_error`)."""
    result = await call_next(ctx)
    if getattr(ctx, "method", None) != "tools/call":
        return result
    if isinstance(result, CallToolResult) and result.is_error:
        for block in result.content:
            if isinstance(block, TextContent) and "\n" in block.text:
                block.text = one_line_error(block.text)
    elif isinstance(result, dict) and result.get("isError"):  # the result as the runner serialized it
        for block in result.get("content") or []:
            if isinstance(block, dict) and isinstance(block.get("text"), str) and "\n" in block["text"]:
                block["text"] = one_line_error(block["text"])
    return result


def make_server(runs_dir: Path, *, allow_actions: bool = False) -> MCPServer:
    """The MCPServer with the read-only tools, and the actions when allowed."""
    from cockpit import __version__

    reader = Reader(runs_dir)
    lock = threading.Lock()
    server = MCPServer("cockpit", version=__version__, instructions=INSTRUCTIONS, log_level="WARNING",
                       middleware=[_one_line_errors])
    read_only = ToolAnnotations(read_only_hint=True, open_world_hint=False)

    @server.tool(annotations=read_only, structured_output=False)
    def runs(limit: Annotated[int, Field(description="most runs listed (1-100)", ge=1, le=100)] = 30,
             archived: Annotated[bool, Field(description="list the archived runs instead")] = False) -> str:
        """The runs in the runs folder, live first: state, trainer, step/max_steps, progress, age,
        ETA, the newest values of the key metrics, how many findings the live judge recorded."""
        return _answer(lambda: reader.runs(archived=archived, limit=limit), lock)

    @server.tool(annotations=read_only, structured_output=False)
    def summary(run: RunRef) -> str:
        """One run: state (and why), progress, ETA, the config that matters (model, data, learning
        rate, batch, LoRA, rewards...), the newest values, the best eval value and its step, recorded
        findings, checkpoints, the last alerts."""
        return _answer(lambda: reader.summary(run), lock)

    @server.tool(annotations=read_only, structured_output=False)
    def metrics(run: PathRef,
                keys: Annotated[list[str] | None, Field(description="metric keys to return as series (at most 8); "
                                                                    "leave out for the list of keys",
                                                        max_length=8)] = None,
                first: Annotated[int | None, Field(description="first step (inclusive)", ge=0)] = None,
                last: Annotated[int | None, Field(description="last step (inclusive)", ge=0)] = None,
                points: Annotated[int, Field(description="most points a series (3-1000), downsampled with "
                                                         "MinMaxLTTB so spikes are kept", ge=3, le=1000)] = 200) -> str:
        """Without keys: every metric key with its point count, min, max, last value and step. With
        keys: each series over [first, last], downsampled with spikes kept, with count, min, max,
        mean, last and the steps where it was NaN/inf."""
        return _answer(lambda: reader.metrics(run, keys, first, last, points), lock)

    @server.tool(annotations=read_only, structured_output=False)
    def findings(run: PathRef,
                 evidence_rows: Annotated[int, Field(description="completions rows shown per piece of evidence "
                                                                 "(0-10)", ge=0, le=10)] = 3) -> str:
        """What is wrong with a run (or a trainer_state.json): each finding with its kind, severity,
        step range, summary, fix and evidence (metric points, completions, prompts), the recorded
        (live) ones merged with what the judge finds in the data now; and what was checked: every
        rule run, the number that kept each quiet rule quiet, the rules the run logged nothing for."""
        return _answer(lambda: reader.findings(run, evidence_rows), lock)

    @server.tool(annotations=read_only, structured_output=False)
    def completions(run: PathRef,
                    step: Annotated[int | None, Field(description="one logged step (default: the newest)",
                                                      ge=0)] = None,
                    steps: Annotated[str | None, Field(description="a step range A:B, A: or :B (inclusive) "
                                                                   "to read, newest first", max_length=40)] = None,
                    order: Annotated[str, Field(description="logged (as logged), best or worst (by reward)")]
                    = "logged",
                    reward: Annotated[str | None, Field(description="rank by this reward function (default: the "
                                                                    "sum of all)")] = None,
                    search: Annotated[str | None, Field(description="only rows whose prompt or completion holds "
                                                                    "this text (case-insensitive)",
                                                        min_length=1, max_length=500)] = None,
                    limit: Annotated[int, Field(description="most rows (1-50)", ge=1, le=50)] = 6,
                    chars: Annotated[int, Field(description="most characters of each prompt and completion",
                                                ge=40, le=4000)] = 600) -> str:
        """The model's sampled completions: at a step, over a range, best or worst by reward (one
        reward function or their sum), or matching a text; with each row's rewards and advantage,
        and each reward function's mean/min/max/distinct values over the rows read."""
        return _answer(lambda: reader.completions(run, step=step, steps=steps, order=order, reward=reward,
                                                  search=search, limit=limit, chars=chars), lock)

    @server.tool(annotations=read_only, structured_output=False)
    def checkpoints(run: PathRef) -> str:
        """A run's checkpoints, newest first: step, loss and eval loss there, the key metric there,
        size, complete or being written, full model or LoRA adapter (and its base)."""
        return _answer(lambda: reader.checkpoints(run), lock)

    @server.tool(annotations=read_only, structured_output=False)
    def compare(runs: Annotated[list[str], Field(description="two to six runs (names, prefixes or paths)",
                                                 min_length=2, max_length=6)],
                keys: Annotated[list[str] | None, Field(description="metric keys to compare (default: the "
                                                                    "key metrics they share)", max_length=12)] = None
                ) -> str:
        """Runs side by side: each one's last, min, max and best value of the shared key metrics and
        its value at the last step all reached, and the config keys whose values differ."""
        return _answer(lambda: reader.compare(runs, keys), lock)

    if allow_actions:
        _add_actions(server, runs_dir)
    return server


def _client(ctx: Any) -> str:
    """The client's name as it said it at initialize (`clientInfo`), for the journal's line."""
    try:
        info = ctx.session.client_params.client_info
        return text(f"{info.name} {info.version}".strip(), 80) or "an MCP client"
    except AttributeError:
        return "an MCP client"


def _add_actions(server: MCPServer, runs_dir: Path) -> None:
    from cockpit.agent.actions import Actions

    acts = Actions(runs_dir)
    changes = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False,
                              open_world_hint=False)

    @server.tool(annotations=changes, structured_output=False)
    def stop_and_save(run: RunRef, ctx: Context) -> str:
        """Ask a live run to save a checkpoint at the end of its current step and stop (ends
        `stopped`; `resume` carries on from it). Written in the run's journal as an agent's."""
        return _answer(lambda: acts.stop_and_save(run, client=_client(ctx)), None)

    @server.tool(annotations=changes, structured_output=False)
    def resume(run: RunRef,
               max_steps: Annotated[int | None, Field(description="train further: a new max_steps (a finished run "
                                                                  "needs one higher than it reached)", ge=1)] = None,
               ctx: Context = None) -> str:  # type: ignore[assignment] # the SDK gives it
        """Start a new attempt of a stopped, failed or finished run from its newest complete
        checkpoint. Written in the run's journal as an agent's."""
        return _answer(lambda: acts.resume(run, max_steps, client=_client(ctx)), None)

    @server.tool(annotations=changes, structured_output=False)
    def sample(run: PathRef,
               checkpoint: Annotated[str, Field(description="a step, `latest` or `base`")] = "latest",
               vs: Annotated[str | None, Field(description="a second model to compare, side by side: a step, "
                                                           "`latest` or `base`")] = None,
               prompts: Annotated[list[str] | None, Field(description="at most 8 prompts (default: the run's own "
                                                                      "sample prompts)", max_length=8)] = None,
               max_new_tokens: Annotated[int | None, Field(description="tokens per answer (default: the run's "
                                                                       "setting, else 64)", ge=1, le=4096)] = None,
               temperature: Annotated[float, Field(description="0: greedy", ge=0.0, le=5.0)] = 0.0,
               chat: Annotated[bool, Field(description="wrap each prompt as a user turn in the chat template")]
               = False, ctx: Context = None) -> str:  # type: ignore[assignment] # the SDK gives it
        """Generate answers from a checkpoint (and a second one, side by side, same seed) on
        prompts, in a sampler process of the run's own Python (CPU by default). Slow: it loads the
        models. Kept in the run's samples/, and written in its journal as an agent's."""
        return _answer(lambda: acts.sample(run, checkpoint=checkpoint, vs=vs, prompts=prompts,
                                           max_new_tokens=max_new_tokens, temperature=temperature, chat=chat,
                                           client=_client(ctx)), None)


def serve_stdio(runs_dir: Path, *, allow_actions: bool = False) -> int:
    make_server(runs_dir, allow_actions=allow_actions).run("stdio")
    return 0


def _token_guard(app: Any, token: str) -> Any:
    """An ASGI app in front of `app` that answers 401 to every HTTP request without the token."""

    async def guarded(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope.get("type") == "http":
            given = ""
            for name, value in scope.get("headers") or []:
                if name.lower() == b"authorization":
                    given = value.decode("latin-1")
            scheme, _, value = given.partition(" ")
            if scheme.lower() != "bearer" or not hmac.compare_digest(value.strip().encode(), token.encode()):
                body = b'{"error": "give the token cockpit mcp printed: Authorization: Bearer TOKEN"}'
                await send({"type": "http.response.start", "status": 401,
                            "headers": [(b"content-type", b"application/json"),
                                        (b"content-length", str(len(body)).encode())]})
                await send({"type": "http.response.body", "body": body})
                return
        await app(scope, receive, send)

    return guarded


TOKEN_ENV = "COCKPIT_MCP_TOKEN"
"""A token of the user's own for --http (an agent's config keeps it between starts); else a new one
each start, printed."""


def serve_http(runs_dir: Path, *, port: int, host: str = "127.0.0.1", allow_actions: bool = False) -> int:
    """Streamable HTTP at http://HOST:PORT/mcp, loopback only, every request with the token."""
    import os

    import uvicorn

    if host not in LOOPBACK:
        raise CockpitError(f"--host {host}: the MCP server binds to loopback only (127.0.0.1, localhost or ::1) — "
                           "reach it from elsewhere through an SSH tunnel")
    given = os.environ.get(TOKEN_ENV, "")
    if given and len(given) < 16:
        raise CockpitError(f"${TOKEN_ENV} is {len(given)} characters — give at least 16 (e.g. the output of "
                           "`python -c 'import secrets; print(secrets.token_urlsafe(32))'`), or unset it")
    token = given or secrets.token_urlsafe(32)
    server = make_server(runs_dir, allow_actions=allow_actions)
    app = _token_guard(server.streamable_http_app(host=host), token)
    shown = f"[{host}]" if ":" in host else host
    print(f"cockpit: MCP over streamable HTTP at http://{shown}:{port}/mcp", file=sys.stderr, flush=True)
    said = f"${TOKEN_ENV}" if given else token  # a token the user chose is not printed
    print(f"cockpit: header: Authorization: Bearer {said}", file=sys.stderr, flush=True)
    uvicorn.run(app, host=host, port=port, log_level="warning", lifespan="on")
    return 0
