"""The sampler: a process of its own that loads checkpoints the way the run trained them and
answers prompts, so neither the TUI nor a live run's process ever holds a second model.

    python -m cockpit.runner.sample      (requests on stdin, events on stdout, JSON lines)

A request (one line): {"models": [{"slot", "label", "path", "kind": full|lora|base, "base",
"tokenizer"}], "prompts": [text or a conversation], "chat": bool, "max_new_tokens", "temperature",
"seed", "device", "max_memory", "gentle"}. Models stay loaded between requests (a chat's turns),
and the process ends at the end of its input. Events: loading, loaded, note, start, token (a
piece of an answer as it is generated), answer, error (one line naming the fix), done.

Each answer is generated with the request's seed set right before it, so two models compared
on one prompt, and the same request twice, draw the same random numbers.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from typing import Any

from cockpit.errors import CockpitError, describe, one_line
from cockpit.runner import startup
from cockpit.runner.parent import end_with_parent

MEMORY_HEADROOM = 1.25
"""A model needs about its weights' bytes to load, plus activations and the generation cache."""


_OUT = sys.stdout
"""Where events go: the process's stdout as it started; anything a library prints goes to stderr."""


def emit(event: str, **data: Any) -> None:
    _OUT.write(json.dumps({"event": event, **data}, ensure_ascii=False) + "\n")
    _OUT.flush()


def _gb(n: float) -> str:
    return f"{n / 2**30:.2f} GB"


def weights_bytes(path: str) -> int | None:
    """Bytes of a local model's or adapter's weight files; None for a hub id."""
    if not os.path.isdir(path):
        return None
    names = [n for n in os.listdir(path) if n.endswith((".safetensors", ".bin")) and "optimizer" not in n
             and n not in ("training_args.bin",)]
    return sum(os.path.getsize(os.path.join(path, n)) for n in names)


def check_fits(label: str, need: int | None, device: str, free: int | None) -> None:
    """One line naming the fix when a model will not fit in what the device has free."""
    if need is None or free is None:
        return
    if need * MEMORY_HEADROOM > free:
        raise CockpitError(f"{label} needs about {_gb(need * MEMORY_HEADROOM)} to sample; {device} has "
                           f"{_gb(free)} free — pick a device with more memory (cockpit.sample.device: "
                           "cuda:N, or --device) or raise cockpit.sample.max_memory")


def free_memory(device: str, cap: int | None) -> int | None:
    free: int | None = None
    if device.startswith("cuda"):
        import torch

        free = int(torch.cuda.mem_get_info(torch.device(device))[0])
    else:
        try:
            import psutil

            free = int(psutil.virtual_memory().available)
        except ImportError:
            free = None
    if cap is not None:
        free = cap if free is None else min(free, cap)
    return free


def pick_device(wanted: str) -> tuple[str, str | None]:
    """(device, note): `cpu`, `cuda`, `cuda:N`, or `auto` (a GPU no process is computing on, else
    the CPU), with a line saying what was chosen when it was not what was asked."""
    wanted = (wanted or "cpu").strip()
    if wanted == "cpu":
        return "cpu", None
    import torch

    if not torch.cuda.is_available():
        if wanted == "auto":
            return "cpu", "no GPU here — sampling on the CPU"
        raise CockpitError(f"device {wanted}: no GPU is visible to the sampler — set cockpit.sample.device: cpu")
    if wanted != "auto":
        return wanted, None
    try:
        import pynvml

        pynvml.nvmlInit()
        for i in range(torch.cuda.device_count()):
            handle = pynvml.nvmlDeviceGetHandleByIndex(i)
            if not pynvml.nvmlDeviceGetComputeRunningProcesses(handle):
                return f"cuda:{i}", f"sampling on cuda:{i}, which no training is using"
    except Exception:  # noqa: BLE001 — no NVML: fall back to the CPU rather than share a GPU
        pass
    return "cpu", "every GPU is busy — sampling on the CPU so the training keeps its GPU"


def load_tokenizer(path: str):
    from transformers import AutoTokenizer

    try:
        tok = AutoTokenizer.from_pretrained(path)
    except OSError as exc:
        raise CockpitError(f"no tokenizer at {path} ({one_line(str(exc), 160)}) — save the tokenizer "
                           "with the model (trainer.save_model does), or give the run's own") from None
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token or tok.unk_token
    return tok


def _from_pretrained(path: str, what: str):
    from transformers import AutoModelForCausalLM

    try:
        return AutoModelForCausalLM.from_pretrained(path)
    except OSError as exc:
        first = one_line(str(exc), 200)
        if os.path.isdir(path):  # a folder here whose files do not load: nothing to download
            raise CockpitError(f"{what} {path} cannot be loaded ({first}) — its files are damaged or "
                               "incomplete: pick another checkpoint (--checkpoint STEP)") from None
        raise CockpitError(f"{what} {path} cannot be loaded here ({first}) — download it first "
                           f"(`hf download {path}`) or point the adapter at a local copy") from None


def load_model(spec: dict[str, Any], device: str, cap: int | None):
    """The model of one slot, on `device`: a full checkpoint, the base model, or a LoRA adapter
    on its base (peft)."""
    kind, path = spec["kind"], spec["path"]
    need = weights_bytes(path)
    if kind == "lora":
        base_need = weights_bytes(spec["base"])
        need = None if base_need is None else base_need + (need or 0)
    check_fits(spec.get("label") or path, need, device, free_memory(device, cap))
    if kind == "lora":
        base = _from_pretrained(spec["base"], "the adapter's base model")
        tok = load_tokenizer(spec.get("tokenizer") or path)
        if base.get_input_embeddings().num_embeddings < len(tok):
            base.resize_token_embeddings(len(tok))
        from peft import PeftModel

        model = PeftModel.from_pretrained(base, path)
    else:
        model = _from_pretrained(path, "the base model" if kind == "base" else "the checkpoint")
        tok = load_tokenizer(spec.get("tokenizer") or path)
    if getattr(model.config, "pad_token_id", None) is None:
        model.config.pad_token_id = tok.pad_token_id
    model.to(device)
    model.eval()
    return model, tok


def prompt_text(tok, prompt: Any, chat: bool, label: str) -> str:
    """The text the model sees: a conversation through the tokenizer's chat template (the run's),
    a plain prompt as it is, or wrapped as one user turn in chat mode."""
    if isinstance(prompt, str) and not chat:
        return prompt
    messages = prompt if isinstance(prompt, list) else [{"role": "user", "content": str(prompt)}]
    if not getattr(tok, "chat_template", None):
        raise CockpitError(f"{label}: its tokenizer has no chat template, so a conversation cannot be "
                           "written for it — give plain-text prompts (no --chat), or save a chat template "
                           "with the tokenizer (tokenizer.chat_template = ...; save_pretrained)")
    return tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)


class _Streamer:
    """transformers' streamer protocol (put/end): each new piece of decoded text as an event."""

    def __init__(self, tok, slot: str, index: int) -> None:
        self.tok, self.slot, self.index = tok, slot, index
        self.ids: list[int] = []
        self.text = ""
        self.first = True

    def put(self, value) -> None:
        if self.first:  # the prompt itself
            self.first = False
            return
        self.ids.extend(int(v) for v in value.reshape(-1).tolist())
        text = self.tok.decode(self.ids, skip_special_tokens=True)
        if text.endswith("\ufffd"):  # half a character: wait for the rest of its bytes
            return
        if len(text) > len(self.text) and text.startswith(self.text):
            emit("token", slot=self.slot, index=self.index, text=text[len(self.text):])
        self.text = text

    def end(self) -> None:
        pass


GENERATE_INPUTS = ("input_ids", "attention_mask")
"""What a causal LM's generate() takes from the tokenizer. A tokenizer saved without
`model_input_names` (a bare PreTrainedTokenizerFast) also returns token_type_ids, which the model
refuses ("model_kwargs are not used by the model"), though the run trained on it."""


def encode(tok, text: str, device: Any) -> dict[str, Any]:
    """The prompt's token ids and attention mask on `device`, nothing else the tokenizer returns."""
    enc = tok(text, return_tensors="pt", add_special_tokens=False)
    return {k: enc[k].to(device) for k in GENERATE_INPUTS if k in enc}


def generate(model, tok, text: str, req: dict[str, Any], slot: str, index: int, device: str) -> str:
    import torch

    enc = encode(tok, text, device)
    temperature = float(req.get("temperature") or 0.0)
    kwargs: dict[str, Any] = {"max_new_tokens": int(req.get("max_new_tokens") or 64),
                              "pad_token_id": tok.pad_token_id, "eos_token_id": tok.eos_token_id}
    if temperature > 0:
        kwargs.update(do_sample=True, temperature=temperature)
    else:
        kwargs.update(do_sample=False, temperature=None, top_p=None, top_k=None)
    torch.manual_seed(int(req.get("seed") or 0))
    streamer = _Streamer(tok, slot, index)
    with torch.no_grad():
        out = model.generate(**enc, streamer=streamer, **kwargs)
    new = out[0, enc["input_ids"].shape[1]:].tolist()
    answer = tok.decode(new, skip_special_tokens=True)
    if not answer.strip() and new:  # only special tokens (an immediate EOS): show them, not nothing
        answer = tok.decode(new, skip_special_tokens=False)
    return answer


def serve(stdin=None) -> int:
    """Answer requests until the input ends."""
    stdin = stdin or sys.stdin
    loaded: dict[tuple[str, str, str, str], tuple[Any, Any]] = {}
    prepared = False
    for line in stdin:
        if not line.strip():
            continue
        req: dict[str, Any] = {}
        try:
            req = json.loads(line)
            device, note = pick_device(str(req.get("device") or "cpu"))
            if not prepared:
                prepared = True
                if req.get("gentle"):
                    import torch

                    os.nice(10)
                    torch.set_num_threads(1)
                    emit("note", text="the run is training on this device too: sampling at low priority "
                                      "on one thread")
            if note:
                emit("note", text=note)
            cap = req.get("max_memory")
            models = []
            for spec in req["models"]:
                key = (spec["kind"], spec["path"], spec.get("base") or "", spec.get("tokenizer") or "")
                if key not in loaded:
                    emit("loading", slot=spec["slot"], label=spec.get("label"))
                    with startup.heavy_start():
                        loaded[key] = load_model(spec, device, int(cap) if cap else None)
                    emit("loaded", slot=spec["slot"], label=spec.get("label"), device=device)
                models.append((spec, *loaded[key]))
            chat = bool(req.get("chat"))
            for i, prompt in enumerate(req.get("prompts") or []):
                for spec, model, tok in models:  # per prompt, every model: side by side fills row by row
                    text = prompt_text(tok, prompt, chat, spec.get("label") or spec["path"])
                    emit("start", slot=spec["slot"], index=i, prompt=text)
                    answer = generate(model, tok, text, req, spec["slot"], i, device)
                    emit("answer", slot=spec["slot"], index=i, label=spec.get("label"), prompt=text,
                         text=answer)
            emit("done", id=req.get("id"))
        except CockpitError as exc:
            emit("error", message=str(exc), id=req.get("id"))
        except Exception as exc:  # noqa: BLE001 — one line for the user, the trace on stderr
            traceback.print_exc(file=sys.stderr)
            sys.stderr.flush()
            # `traceback`: the launch side names its log file, which this process does not know.
            emit("error", message=f"sampling failed: {describe(exc)}", traceback=True, id=req.get("id"))
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv:
        print("usage: python -m cockpit.runner.sample  (JSON-line requests on stdin)", file=sys.stderr)
        return 2
    end_with_parent("sampler")  # a SIGKILLed `cockpit sample` or TUI: not left loading a model
    global _OUT
    _OUT = os.fdopen(os.dup(1), "w", encoding="utf-8")  # events only; stray prints go to stderr
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return serve()


if __name__ == "__main__":
    sys.exit(main())
