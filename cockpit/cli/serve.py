"""`cockpit serve`: the TUI in a browser, locked the way Jupyter locks its server.

A served cockpit can stop runs and launch commands, so nobody but the person who started it may
drive it, not even a web page open in that person's own browser:

- a random token is in the printed URL; the first visit with it sets a cookie (HttpOnly,
  SameSite=Strict, one per port) and drops the token from the address bar;
- every request but the static files needs the token (`?token=`, the cookie, or an
  `Authorization: token …` header), compared in constant time;
- a websocket whose Origin is not the page's own is refused (a browser always sends Origin; a
  page elsewhere cannot forge it), whatever token or cookie comes with it;
- bound to loopback (the default), a Host header that is not a loopback name is refused, so a
  DNS-rebinding page cannot reach it as its own origin;
- `--host` other than loopback warns, and changes none of the above.

The page tells the browser where its websocket is: at the host and port the browser itself asked
for (its Host header), not the address bound — `--host 0.0.0.0` is no address a browser elsewhere
can reach (it got `ws://0.0.0.0:…`), and a page opened as `localhost` must not be sent to
`127.0.0.1`, another origin.
Each websocket runs a TUI process of its own, so they are bounded: at most `MAX_SESSIONS` at once
(the next is refused, 503, in one line), each in a session of its own, and its whole process group
is gone when its socket closes (asked to quit, then SIGTERM, then SIGKILL).

textual-serve builds an aiohttp application; the lock is one middleware in front of its routes.
"""

from __future__ import annotations

import hmac
import ipaddress
import logging
import re
import secrets
import signal
import socket
import sys
from typing import Any
from urllib.parse import urlsplit

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
WILDCARDS = frozenset({"", "0.0.0.0", "::", "[::]"})
"""Bind addresses that mean every interface: no browser can be sent to them."""
MAX_SESSIONS = 8
"""TUI processes a served cockpit runs at once (one a browser tab): each holds ~40 MB and a
Python; a page that opens websockets in a loop gets 503 past this."""
QUIT_WAIT_S = 3.0
"""How long a TUI whose socket closed has to quit by itself before its process group is signalled."""


def is_loopback(host: str) -> bool:
    """True for localhost and any loopback address (127.0.0.0/8, ::1)."""
    name = host.strip("[]").lower()
    if name in LOOPBACK_NAMES or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def new_token() -> str:
    return secrets.token_urlsafe(32)


def _same(given: str | None, token: str) -> bool:
    return given is not None and hmac.compare_digest(given.encode(), token.encode())


def _hostname(netloc: str) -> str:
    """'127.0.0.1:8000' → 127.0.0.1, '[::1]:8000' → ::1."""
    return urlsplit(f"//{netloc}").hostname or ""


class TokenHidden(logging.Filter):
    """The token out of every log line (aiohttp's access log writes each request line, the first
    visit's `/?token=…` included, and its Referer): the token itself, and any `token=` value, are
    written `token=<hidden>`. The line stays: only the secret goes."""

    _QUERY = re.compile(r"([?&;]token=)[^&;\s\"']*", re.I)

    def __init__(self, token: str) -> None:
        super().__init__()
        self._token = token

    def filter(self, record: logging.LogRecord) -> bool:
        text = record.getMessage()
        hidden = self._QUERY.sub(r"\1<hidden>", text.replace(self._token, "<hidden>"))
        if hidden != text:
            record.msg, record.args = hidden, None
        return True


def make_server(command: str, *, host: str, port: int, token: str, max_sessions: int = MAX_SESSIONS) -> Any:
    """A textual-serve Server whose every route but /static wants the token, and whose websocket
    wants the page's own Origin."""
    import asyncio
    import os

    from aiohttp import web
    from textual_serve.server import Server

    cookie = f"cockpit_token_{port}"
    local = is_loopback(host)
    server: Any = None

    def refuse(why: str) -> web.HTTPForbidden:
        return web.HTTPForbidden(text=f"cockpit serve: {why}\n")

    @web.middleware
    async def lock(request: web.Request, handler: Any) -> web.StreamResponse:
        if local and not is_loopback(_hostname(request.host)):
            raise refuse("this server answers only to localhost (Host header refused)")
        if request.path.startswith("/static/"):  # the page's scripts and fonts: nothing of the user's
            return await handler(request)
        if request.path == "/ws":
            origin = request.headers.get("Origin")
            if origin is not None and urlsplit(origin).netloc.lower() != request.host.lower():
                raise refuse("a websocket from another origin is refused")
        given = request.query.get("token")
        if _same(given, token):
            if request.path == "/" and request.method == "GET":
                # Keep the token out of the address bar and history: a cookie carries it from now on.
                rest = {k: v for k, v in request.query.items() if k != "token"}
                found = web.HTTPFound(str(request.rel_url.with_query(rest)))
                found.set_cookie(cookie, token, httponly=True, samesite="Strict", path="/")
                raise found
            return await _page(request, handler)
        auth = request.headers.get("Authorization", "")
        if _same(request.cookies.get(cookie), token) or (auth.startswith("token ") and _same(auth[6:], token)):
            return await _page(request, handler)
        raise refuse("open the URL with the token that `cockpit serve` printed")

    async def _page(request: web.Request, handler: Any) -> web.StreamResponse:
        if request.path == "/" and server is not None:
            # textual-serve writes its URLs (the websocket's) from `public_url`; the index handler
            # reads it before its first await, so setting it here is this request's alone.
            server.public_url = f"{request.scheme}://{request.host}"
        return await handler(request)

    from textual_serve.app_service import AppService

    class SessionService(AppService):
        """A TUI process in a session of its own, so that its whole group can be ended."""

        async def _open_app_process(self, width: int = 80, height: int = 24) -> Any:
            self._process = process = await asyncio.create_subprocess_shell(
                f"exec {self.command}", stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE, env=self._build_environment(width=width, height=height),
                start_new_session=True)
            self._stdin = process.stdin
            return process

        async def end(self) -> None:
            """Ask it to quit; what is left of its group after QUIT_WAIT_S gets SIGTERM, then SIGKILL."""
            try:
                await asyncio.wait_for(self.stop(), QUIT_WAIT_S)
            except Exception:  # noqa: BLE001 - a timeout, or whatever stop met: the group goes below
                pass
            process = self._process
            if process is None:
                return
            for sig in (signal.SIGTERM, signal.SIGKILL):
                if process.returncode is not None:
                    break
                try:
                    os.killpg(process.pid, sig)
                except (ProcessLookupError, PermissionError):
                    break
                try:
                    await asyncio.wait_for(process.wait(), QUIT_WAIT_S)
                except TimeoutError:
                    continue
            try:  # children the TUI left in its group (the group outlives its leader)
                os.killpg(process.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass

    sessions: set[SessionService] = set()

    class LockedServer(Server):
        async def handle_websocket(self, request: web.Request) -> web.WebSocketResponse:
            """One TUI process for the socket, at most MAX_SESSIONS at once, ended with its socket."""
            if len(sessions) >= max_sessions:
                raise web.HTTPServiceUnavailable(
                    text=f"cockpit serve: {max_sessions} cockpit tabs are open already — close one "
                         "(or start it with a higher --max-sessions)\n")
            websocket = web.WebSocketResponse(heartbeat=15)

            def size(key: str, default: int) -> int:
                try:
                    return max(10, min(1000, int(request.query.get(key, default))))
                except ValueError:
                    return default

            async def close() -> None:
                await websocket.close()

            service = SessionService(self.command, write_bytes=websocket.send_bytes, write_str=websocket.send_str,
                                     close=close, download_manager=self.download_manager,
                                     debug=self.debug)
            sessions.add(service)
            try:
                await websocket.prepare(request)
                await service.start(size("width", 80), size("height", 24))
                await self._process_messages(websocket, service)
            except asyncio.CancelledError:
                await websocket.close()
            except Exception as exc:  # noqa: BLE001 - one socket's trouble never stops the server
                print(f"cockpit: serve: a session ended with {type(exc).__name__}: {exc}"[:300],
                      file=sys.stderr, flush=True)
            finally:
                await service.end()
                sessions.discard(service)
            return websocket

        async def _make_app(self) -> web.Application:
            app = await super()._make_app()
            app.middlewares.append(lock)
            return app

        def initialize_logging(self) -> None:
            super().initialize_logging()
            for name in ("aiohttp.access", "aiohttp.server", "aiohttp.web", "textual-serve"):
                logging.getLogger(name).addFilter(TokenHidden(token))

        async def on_startup(self, app: web.Application) -> None:  # noqa: ARG002 - textual-serve's on_startup signature
            print(f"cockpit: serving on {printed}/?token={token}", flush=True)
            print("cockpit: open that URL (it holds the token); Ctrl+C stops the server", flush=True)

    # Bound to every interface: the URL names this machine, which a browser elsewhere can reach.
    printed = f"http://{socket.getfqdn()}:{port}" if host in WILDCARDS else None
    server = LockedServer(command, host=host, port=port, title="cockpit")
    printed = printed or server.public_url
    return server


def serve(command: str, *, host: str, port: int, token: str | None = None, max_sessions: int = MAX_SESSIONS) -> int:
    if not is_loopback(host):
        print(f"cockpit: serving on {host}: anyone who can reach this port and has the token can drive the "
              "cockpit and launch commands; prefer localhost and an SSH tunnel "
              f"(ssh -L {port}:localhost:{port} HOST)", file=sys.stderr, flush=True)
    make_server(command, host=host, port=port, token=token or new_token(), max_sessions=max_sessions).serve()
    return 0
