"""Starting and acting on runs: the launch plan (`plan`: prepare, start the supervisor, stop,
resume), launchers (python, torchrun, accelerate, the command lines they make), Slurm (the job
script, submission, following the job) and script mode. It sits above `config` and `alerts`,
which it reads, and below the front ends; the run folder it writes is `cockpit.run`'s."""
