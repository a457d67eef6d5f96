"""The supervisor: the small detached process between the UI and the trainer.

Started by `cockpit.launch.plan` in a new session with stdin from /dev/null, it outlives the UI and
the SSH session, starts the trainer (the runner, a script, or a Slurm job), records its pids,
samples system figures, checks alert rules, forwards stops, and writes how the run ended.
Standard library and cockpit's own non-UI packages only: no Textual, no torch.
"""
