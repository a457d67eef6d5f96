"""The offline demo's data: datasets in every format TRL takes, written without any download.
The tokenizer and tiny models are built by `cockpit.runner.assets` (they need torch)."""
