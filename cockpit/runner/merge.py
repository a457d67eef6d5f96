"""Merge a LoRA checkpoint into its base and save a full model with the run's tokenizer and chat
template, ready for `from_pretrained` or a serving engine; optionally push it to the Hub.

    python -m cockpit.runner.merge ADAPTER BASE OUT [--tokenizer DIR] [--push REPO]

It runs as its own process (the CLI spawns it, with the script run's Python and the sampler's
folder: `cockpit.launch.sampler`), so the core never imports torch or peft. Its stderr goes to a log
file; its last line there, `cockpit: ...`, is what the CLI says (exit 2: a known problem and its
fix; 1: a failure whose traceback is above it in the log).
"""

from __future__ import annotations

import argparse
import errno
import os
import re
import shutil
import sys
import tempfile
import traceback
from pathlib import Path

from cockpit.errors import CockpitError, describe, one_line
from cockpit.runner import startup
from cockpit.runner.parent import end_with_parent

OFFLINE_LINE = ("{out} is saved, but the Hugging Face Hub cannot be reached (offline) — push it later: "
                "hf upload {repo} {out}")


_partial: list[Path] = []
"""The folder being written beside OUT, while it is: removed if the merger must end midway."""


def _drop_partial() -> None:
    for tmp in _partial:
        shutil.rmtree(tmp, ignore_errors=True)


def merge(adapter: str, base: str, out: Path, tokenizer: str | None = None) -> Path:
    """base + adapter, merged (peft's merge_and_unload), saved as safetensors with the tokenizer."""
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    from cockpit.runner.sample import load_tokenizer

    try:
        base_model = AutoModelForCausalLM.from_pretrained(base)
    except OSError as exc:
        raise CockpitError(f"the adapter's base model {base} cannot be loaded here "
                           f"({one_line(str(exc), 160)}) — download it first (`hf download {base}`)") from None
    tok = load_tokenizer(tokenizer or adapter)
    rows = int(getattr(base_model.get_input_embeddings(), "num_embeddings", 0))
    if rows < len(tok):  # added tokens: grow to the tokenizer
        base_model.resize_token_embeddings(len(tok))
    model = PeftModel.from_pretrained(base_model, adapter).merge_and_unload()
    # Written beside OUT and renamed into place when whole: a full disk or a kill midway leaves
    # no half-written model folder where a model is expected.
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=out.parent, prefix=f".{out.name}.partial-"))
    _partial.append(tmp)
    try:
        model.save_pretrained(tmp, safe_serialization=True)
        tok.save_pretrained(tmp)  # tokenizer files and its chat template
        if out.is_dir() and not any(out.iterdir()):
            out.rmdir()
        os.rename(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    finally:
        _partial.remove(tmp)
    return out


def push(out: Path, repo: str) -> str:
    """Upload the merged folder; offline (HF_HUB_OFFLINE or no connection) is one line, not a trace."""
    from huggingface_hub import HfApi, constants

    if constants.HF_HUB_OFFLINE:
        raise CockpitError(OFFLINE_LINE.format(out=out, repo=repo))
    api = HfApi()
    try:
        api.create_repo(repo, exist_ok=True)
        info = api.upload_folder(repo_id=repo, folder_path=str(out))
    except (OSError, ConnectionError) as exc:
        if "connect" in str(exc).lower() or "resolve" in str(exc).lower() or "offline" in str(exc).lower():
            raise CockpitError(OFFLINE_LINE.format(out=out, repo=repo)) from None
        raise CockpitError(f"{out} is saved, but the upload to {repo} failed ({exc}) — check `hf auth "
                           f"whoami` and the repo name, then push it with: hf upload {repo} {out}") from None
    return str(getattr(info, "commit_url", repo))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m cockpit.runner.merge")
    p.add_argument("adapter")
    p.add_argument("base")
    p.add_argument("out")
    p.add_argument("--tokenizer")
    p.add_argument("--push", metavar="REPO")
    args = p.parse_args(argv)
    # A SIGKILLed `cockpit merge` (or one whose terminal went): not left loading and writing a model
    # for minutes, nor a half-written folder beside OUT.
    end_with_parent("merger", on_end=_drop_partial)
    try:
        with startup.heavy_start():
            out = merge(args.adapter, args.base, Path(args.out), args.tokenizer)
        print(f"merged {args.adapter} into {args.base}: {out}")
        if args.push:
            print(f"pushed to {push(out, args.push)}")
    except CockpitError as exc:
        print(f"cockpit: {exc}", file=sys.stderr)
        return exc.exit_code
    except Exception as exc:  # noqa: BLE001 — the trace to the log, the last line for the user
        traceback.print_exc(file=sys.stderr)
        # safetensors' writer says a full disk as SafetensorError("… No space left on device (os error 28)")
        words = (exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc).splitlines()[0] if str(exc)
                 else type(exc).__name__)[:300]
        name = errno.errorcode.get(exc.errno or 0, "") if isinstance(exc, OSError) else ""
        if not name and re.search(r"No space left on device|os error 28\b", words):
            name = "ENOSPC"
        if name:  # a full disk, a read-only mount: one line, nothing half-written left
            print(f"cockpit: cannot write the merged model to {args.out}: {words} ({name}) — "
                  "nothing was left there; free some space or give another -o", file=sys.stderr)
        else:
            print(f"cockpit: merging failed: {describe(exc)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
