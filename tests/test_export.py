"""`cockpit export`: CSV of every metric and a PNG of the default panels, without the TUI."""

from __future__ import annotations

import csv
import subprocess

import pytest

from conftest import FIXTURES, cockpit_cmd


def test_csv_has_every_step_and_key_with_nan_kept(tmp_path):
    out = tmp_path / "m.csv"
    proc = subprocess.run(cockpit_cmd("export", str(FIXTURES / "trl_dpo_nan_gradnorm_midrun.json"),
                                      "--csv", str(out)), capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    rows = list(csv.DictReader(out.open()))
    train = [r for r in rows if r["kind"] == "train"]
    assert [int(r["step"]) for r in train] == list(range(1, 76))
    assert "rewards/margins" in rows[0] and "grad_norm" in rows[0]
    assert sum(1 for r in train if r["grad_norm"] == "nan") == 4


def test_png_is_written_for_a_grpo_run(tmp_path):
    out = tmp_path / "p.png"
    proc = subprocess.run(cockpit_cmd("export", str(FIXTURES / "trl_grpo_modern_multireward.json"),
                                      "--png", str(out)), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out.stat().st_size > 10_000


def test_eval_rows_sharing_a_step_with_train_rows_are_both_kept(tmp_path):
    out = tmp_path / "w.csv"
    subprocess.run(cockpit_cmd("export", str(FIXTURES / "seq2seq_whisper_eval_wer_legacy_format.json"),
                               "--csv", str(out)), check=True, capture_output=True, timeout=60)
    rows = list(csv.DictReader(out.open()))
    at_1000 = {r["kind"] for r in rows if r["step"] == "1000"}
    assert at_1000 == {"train", "eval"}


@pytest.mark.parametrize("content", [b"", b'{"log_history": [{"loss": 1, "st', b"\x00\xff garbage",
                                     b'{"log_history": 5}'])
def test_unusable_input_is_one_line_and_exit_2(tmp_path, content):
    bad = tmp_path / "trainer_state.json"
    bad.write_bytes(content)
    proc = subprocess.run(cockpit_cmd("export", str(bad), "--csv", str(tmp_path / "o.csv")),
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr


def test_serve_publishes_the_app_on_localhost(tmp_path):
    import socket
    import time
    import urllib.request

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(cockpit_cmd("--runs-dir", str(tmp_path), "serve", "--port", str(port)),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        body = b""
        for _ in range(100):
            try:
                body = urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2).read()
                break
            except OSError:
                time.sleep(0.2)
        assert b"<html" in body.lower() and b"cockpit" in body.lower()
    finally:
        proc.terminate()
        proc.wait(timeout=10)
