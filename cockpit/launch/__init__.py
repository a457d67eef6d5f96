"""Starting and acting on runs: the launch plan (`plan`: prepare, start the supervisor, stop,
resume), launchers (python, torchrun, accelerate, the command lines they make), Slurm (the job
script, submission, following the job) and script mode. It sits above `config` and `alerts`,
which it reads, and below the front ends; the run folder it writes is `cockpit.run`'s."""

DEFAULT_NEW_TOKENS = 64
"""A sampled answer's length when neither --max-new-tokens nor the run's cockpit.sample.max_new_tokens
says (here, not in `sampler`, so the CLI's help names it without importing the sampler's side)."""
