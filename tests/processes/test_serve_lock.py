"""`cockpit serve` is locked: a real `cockpit serve` process on 127.0.0.1 and a real websocket
client (aiohttp's). A foreign Origin, a missing token and a wrong token are refused; the printed
token with the page's own Origin gets the TUI; the first visit trades the token for a cookie."""

from __future__ import annotations

import asyncio
import os
import select
import socket
import time

import aiohttp
import pytest

from cockpit.cli.serve import is_loopback
from helpers import serve


@pytest.fixture
def served(tmp_path):
    """A real `cockpit serve` in a session of its own; its whole process group goes at the end."""
    with serve(tmp_path) as server:
        yield server.base, server.token


async def _ws_status(url: str, **headers: str) -> int:
    """The handshake's answer: 101 when the websocket opened, else the HTTP status."""
    async with aiohttp.ClientSession() as session:
        try:
            async with session.ws_connect(url, headers=headers):
                return 101
        except aiohttp.WSServerHandshakeError as exc:
            return exc.status


@pytest.mark.proc
def test_a_websocket_from_another_origin_or_without_the_token_is_refused(served):
    base, token = served
    ws = base.replace("http://", "ws://") + "/ws"

    async def check() -> dict[str, int]:
        return {
            "no token, foreign origin": await _ws_status(ws, Origin="http://evil.example"),
            "no token, no origin": await _ws_status(ws),
            "no token, own origin": await _ws_status(ws, Origin=base),
            "wrong token": await _ws_status(f"{ws}?token=not-{token}", Origin=base),
            "right token, foreign origin": await _ws_status(f"{ws}?token={token}", Origin="http://evil.example"),
            "right token, null origin": await _ws_status(f"{ws}?token={token}", Origin="null"),
            "right token, foreign Host": await _ws_status(f"{ws}?token={token}", Host="evil.example"),
        }

    assert asyncio.run(check()) == dict.fromkeys([
        "no token, foreign origin", "no token, no origin", "no token, own origin", "wrong token",
        "right token, foreign origin", "right token, null origin", "right token, foreign Host"], 403)


@pytest.mark.proc
def test_the_printed_token_and_the_pages_own_origin_get_the_tui(served):
    base, token = served

    async def check() -> tuple[int, int, int, bytes]:
        # unsafe=True: keep cookies for an IP address, as a browser does (aiohttp's jar would not)
        async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as session:
            async with session.get(base + "/") as resp:
                bare = resp.status
            async with session.get(f"{base}/?token={token}", allow_redirects=False) as resp:
                visit = resp.status
                assert resp.headers["Location"] == "/"  # the token leaves the address bar
                assert "HttpOnly" in resp.headers["Set-Cookie"] and "SameSite=Strict" in resp.headers["Set-Cookie"]
            async with session.get(base + "/") as resp:  # the cookie now stands for the token
                page = resp.status
            got = b""
            async with session.ws_connect(base.replace("http://", "ws://") + "/ws?width=100&height=30",
                                          headers={"Origin": base}) as ws:
                deadline = time.monotonic() + 180
                while len(got) < 2000 and time.monotonic() < deadline:
                    try:
                        msg = await ws.receive(timeout=5)
                    except TimeoutError:
                        continue
                    if msg.type == aiohttp.WSMsgType.BINARY:
                        got += msg.data
                    elif msg.type == aiohttp.WSMsgType.TEXT:
                        got += msg.data.encode()
                    elif msg.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED, aiohttp.WSMsgType.ERROR):
                        break
            return bare, visit, page, got

    bare, visit, page, got = asyncio.run(check())
    assert (bare, visit, page) == (403, 302, 200)
    assert len(got) >= 2000  # the TUI's screen came through


def test_only_loopback_names_count_as_local():
    assert all(is_loopback(h) for h in ("127.0.0.1", "localhost", "::1", "[::1]", "127.0.0.2"))
    assert not any(is_loopback(h) for h in ("0.0.0.0", "192.168.1.5", "evil.example", "localhost.evil.example"))


def test_served_on_every_interface_the_page_sends_a_remote_browser_to_the_address_it_used(tmp_path):
    """`--host 0.0.0.0`: the page's websocket URL said `ws://0.0.0.0:…`, which a browser elsewhere
    cannot reach. It is the host the browser asked for (its Host header); the printed URL names this
    machine. (Only loopback is connected to here; the Host header stands for the remote name.)"""
    with serve(tmp_path, "--host", "0.0.0.0", printed=rb"http://[^/\s]+:\d+") as server:
        printed, token = server.base, server.token
        port = int(printed.rsplit(":", 1)[1])
        assert "0.0.0.0" not in printed and printed == f"http://{socket.getfqdn()}:{port}"
        remote = f"cockpit-box.example:{port}"

        async def check() -> tuple[int, str, int]:
            auth = {"Authorization": f"token {token}", "Host": remote}
            async with aiohttp.ClientSession() as session, \
                    session.get(f"http://127.0.0.1:{port}/", headers=auth) as resp:
                status, page = resp.status, await resp.text()
            opened = await _ws_status(f"ws://127.0.0.1:{port}/ws?token={token}", Host=remote,
                                      Origin=f"http://{remote}")
            return status, page, opened

        status, page, opened = asyncio.run(check())
        assert status == 200 and f"ws://{remote}/ws" in page and "0.0.0.0" not in page, page[:2000]
        assert opened == 101


def test_the_access_log_never_prints_the_token(tmp_path):
    """The real server's log: every request line is there, the token in none of them, whether it
    came in the query (the first visit), a wrong one beside it, or a cookie."""
    with serve(tmp_path) as server:
        proc, base, token, out = server.proc, server.base, server.token, server.out
        assert proc.stdout is not None
        printed = len(out)

        async def visit() -> list[int]:
            async with aiohttp.ClientSession() as session:
                got = []
                for url in (f"{base}/?token={token}", f"{base}/?x=1&token={token}", f"{base}/?token=wrong-one",
                            f"{base}/"):
                    async with session.get(url, allow_redirects=False) as resp:
                        got.append(resp.status)
                return got

        statuses = asyncio.run(visit())
        assert statuses[0] in (200, 302, 303) and statuses[2] == 403, statuses
        deadline = time.monotonic() + 10
        while out.count(b"GET /") < 4 and time.monotonic() < deadline:
            ready, _, _ = select.select([proc.stdout], [], [], 0.5)
            if ready:
                out += os.read(proc.stdout.fileno(), 65536)
        log = out[printed:].decode(errors="replace")
        assert log.count("GET /") >= 4, log  # the access log is there ...
        assert token not in log and "wrong-one" not in log, log  # ... without a token in it
        assert "token=<hidden>" in log
