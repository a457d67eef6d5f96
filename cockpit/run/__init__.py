# Shipped by the hook (cockpit.hook.bundle): runs in the user's Python 3.9+, stdlib only (+ their transformers).
"""The run folder: the contract between the UI, the supervisor and the training process
(`folder`), the journal and its tailer, run summaries (lists, name resolver, the effective state)
and diagnosis of how a run died. Everything reads it; it imports only the ground floor
(`cockpit.errors`, `cockpit.paths`, `cockpit.files`). Starting runs is `cockpit.launch`'s."""

RUN_DIR_ENV = "COCKPIT_RUN_DIR"
"""The run's marker: the supervisor puts it (naming the run folder) in the environment of everything
it starts; the hook reads it to know its run, and a process is the run's own only if it carries it
(`owner`)."""

HELPER_ENV = "COCKPIT_HELPER"
"""The role of a process the supervisor starts beside the trainer (the SFT data check, py-spy, a
notify command, and what they start): set to "1" in its environment next to the run's marker. It
is the run's (a sweep or a force stop ends it) but never the trainer: a reader that asks whether
the trainer still runs leaves it out (`owner.run_processes(..., trainer_only=True)`)."""
