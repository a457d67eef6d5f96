"""The run folder and everything that acts on it: the contract between the UI, the supervisor and
the training process (`folder`), the journal and its tailer, launching, launchers (torchrun,
accelerate, Slurm), script mode, diagnosis of how a run died, run summaries and plain-text watch."""
