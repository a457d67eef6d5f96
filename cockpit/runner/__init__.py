"""Code that imports torch, transformers, trl, peft, datasets or tokenizers; it runs inside the training process."""
