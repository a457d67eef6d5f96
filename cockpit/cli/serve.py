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

textual-serve builds an aiohttp application; the lock is one middleware in front of its routes.
"""

from __future__ import annotations

import hmac
import ipaddress
import secrets
import socket
import sys
from typing import Any
from urllib.parse import urlsplit

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
WILDCARDS = frozenset({"", "0.0.0.0", "::", "[::]"})
"""Bind addresses that mean every interface: no browser can be sent to them."""


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


def make_server(command: str, *, host: str, port: int, token: str) -> Any:
    """A textual-serve Server whose every route but /static wants the token, and whose websocket
    wants the page's own Origin."""
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

    class LockedServer(Server):
        async def _make_app(self) -> web.Application:
            app = await super()._make_app()
            app.middlewares.append(lock)
            return app

        async def on_startup(self, app: web.Application) -> None:  # noqa: ARG002 - textual-serve's on_startup signature
            print(f"cockpit: serving on {printed}/?token={token}", flush=True)
            print("cockpit: open that URL (it holds the token); Ctrl+C stops the server", flush=True)

    # Bound to every interface: the URL names this machine, which a browser elsewhere can reach.
    printed = f"http://{socket.getfqdn()}:{port}" if host in WILDCARDS else None
    server = LockedServer(command, host=host, port=port, title="cockpit")
    printed = printed or server.public_url
    return server


def serve(command: str, *, host: str, port: int, token: str | None = None) -> int:
    if not is_loopback(host):
        print(f"cockpit: serving on {host}: anyone who can reach this port and has the token can drive the "
              "cockpit and launch commands; prefer localhost and an SSH tunnel "
              f"(ssh -L {port}:localhost:{port} HOST)", file=sys.stderr, flush=True)
    make_server(command, host=host, port=port, token=token or new_token()).serve()
    return 0
