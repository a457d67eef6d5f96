"""The run folder: the contract between the UI, the supervisor and the training process
(`folder`), the journal and its tailer, run summaries (lists, name resolver, the effective state)
and diagnosis of how a run died. Everything reads it; it imports only the ground floor
(`cockpit.errors`, `cockpit.paths`, `cockpit.files`). Starting runs is `cockpit.launch`'s."""
