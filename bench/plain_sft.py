"""The baseline of the throughput and first-step figures: a plain TRL script, no cockpit.

    python bench/plain_sft.py SPEC.json OUT.json

SPEC.json: {"model": path, "data": folder, "config": {SFTConfig keys}}. What a user would
write: load the tokenizer, model and dataset, build SFTTrainer, train. The one addition is
a callback that notes time.time() in on_log — the same hook (and so the same moment of
each step) at which cockpit's callback stamps its journal lines, so both sides are timed
the same way. It imports nothing from cockpit.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path


def main() -> int:
    spec = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))
    out_path = sys.argv[2]

    from datasets import load_dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback
    from trl import SFTConfig, SFTTrainer

    stamps: dict[int, float] = {}

    class Stamp(TrainerCallback):
        def on_log(self, args, state, control, logs=None, **kwargs):  # noqa: ARG002 - TrainerCallback's signature
            if logs and "loss" in logs:
                stamps[int(state.global_step)] = time.time()

    tokenizer = AutoTokenizer.from_pretrained(spec["model"])
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    model = AutoModelForCausalLM.from_pretrained(spec["model"])
    train = load_dataset(spec["data"], split="train")
    args = SFTConfig(**spec["config"])
    trainer = SFTTrainer(model=model, args=args, train_dataset=train, processing_class=tokenizer,
                         callbacks=[Stamp()])
    trainer.train()
    with open(out_path, "w", encoding="utf-8") as fh:
        json.dump({"stamps": stamps}, fh)
    return 0


if __name__ == "__main__":
    sys.exit(main())
