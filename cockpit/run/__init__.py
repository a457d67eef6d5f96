# Shipped by the hook (cockpit.hook.bundle): runs in the user's Python 3.9+, stdlib only (+ their transformers).
"""The run folder: the contract between the UI, the supervisor and the training process
(`folder`), the journal and its tailer, run summaries (lists, name resolver, the effective state)
and diagnosis of how a run died. Everything reads it; it imports only the ground floor
(`cockpit.errors`, `cockpit.paths`, `cockpit.files`). Starting runs is `cockpit.launch`'s."""

RUN_DIR_ENV = "COCKPIT_RUN_DIR"
"""The run's marker: the supervisor puts it (naming the run folder) in the environment of everything
it starts; the hook reads it to know its run, and a process is the run's own only if it carries it
(`owner`)."""
