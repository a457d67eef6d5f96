"""A real one-node Slurm cluster for the tests, brought up and down by pid.

Debian's `slurm-wlm` and `munge` packages run it as root: munged as the munge user with its own
key and socket, slurmctld and slurmd with a slurm.conf whose state, spool, logs and ports live in
a temporary folder. Only the daemons started here are ended, by the pids they wrote. Where the
packages are missing (or not root), `start` says why, and the tests skip with that reason.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

from helpers import free_port

NEEDED = ("munged", "slurmctld", "slurmd", "sbatch", "squeue", "scancel", "scontrol", "runuser")


def why_not() -> str | None:
    missing = [c for c in NEEDED if shutil.which(c) is None]
    if missing:
        return f"Slurm is not installed ({', '.join(missing)} missing): apt-get install slurm-wlm munge"
    if os.geteuid() != 0:
        return "the local Slurm cluster runs its daemons as root"
    return None


class LocalSlurm:
    def __init__(self, root: Path):
        self.root = root
        self.conf = root / "slurm.conf"
        self.pidfiles = [root / "munge" / "munged.pid", root / "slurmctld.pid", root / "slurmd.pid"]

    @classmethod
    def in_tmp(cls) -> LocalSlurm:
        """munged wants every folder above its socket open to all: pytest's tmp folders are not."""
        import tempfile

        return cls(Path(tempfile.mkdtemp(prefix="cockpit-slurm-")))

    @property
    def env(self) -> dict[str, str]:
        return {"SLURM_CONF": str(self.conf)}

    def start(self, timeout: float = 30.0) -> None:
        r = self.root
        for d in ("munge", "mkey", "state", "spool", "log"):
            (r / d).mkdir(parents=True, exist_ok=True)
        os.chmod(r, 0o755)
        key = r / "mkey" / "munge.key"
        key.write_bytes(os.urandom(1024))
        shutil.chown(r / "mkey", "munge", "munge")
        shutil.chown(key, "munge", "munge")
        os.chmod(r / "mkey", 0o700)
        os.chmod(key, 0o400)
        shutil.chown(r / "munge", "munge", "munge")
        os.chmod(r / "munge", 0o755)
        sock = r / "munge" / "munge.sock"
        subprocess.run(["runuser", "-u", "munge", "--", "munged", "--key-file", str(key), "--socket", str(sock),
                        "--pid-file", str(r / "munge" / "munged.pid"), "--log-file", str(r / "munge" / "munged.log"),
                        "--seed-file", str(r / "munge" / "munged.seed")], check=True, capture_output=True, timeout=30,
                       text=True)
        host = socket.gethostname().split(".")[0]
        cpus = os.cpu_count() or 1
        self.conf.write_text("\n".join([
            "ClusterName=cockpit-test", f"SlurmctldHost={host}", "SlurmUser=root",
            "AuthType=auth/munge", f"AuthInfo=socket={sock}", "CredType=cred/munge",
            "ProctrackType=proctrack/linuxproc", "TaskPlugin=task/none",
            "SelectType=select/cons_tres", "SelectTypeParameters=CR_CPU",
            f"SlurmctldPort={free_port()}", f"SlurmdPort={free_port()}",
            f"StateSaveLocation={r / 'state'}", f"SlurmdSpoolDir={r / 'spool'}",
            f"SlurmctldPidFile={r / 'slurmctld.pid'}", f"SlurmdPidFile={r / 'slurmd.pid'}",
            f"SlurmctldLogFile={r / 'log' / 'slurmctld.log'}", f"SlurmdLogFile={r / 'log' / 'slurmd.log'}",
            "ReturnToService=2", "MpiDefault=none", "JobAcctGatherType=jobacct_gather/none",
            "AccountingStorageType=accounting_storage/none", "SchedulerType=sched/backfill",
            "MinJobAge=600", "KillWait=5",
            f"NodeName={host} CPUs={cpus} RealMemory=4000 State=UNKNOWN",
            "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP", ""]), encoding="utf-8")
        env = {**os.environ, **self.env}
        subprocess.run(["slurmctld", "-f", str(self.conf)], check=True, env=env, capture_output=True, timeout=30)
        subprocess.run(["slurmd", "-f", str(self.conf)], check=True, env=env, capture_output=True, timeout=30)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            out = subprocess.run(["sinfo", "-h", "-o", "%t"], env=env, capture_output=True, text=True, timeout=30)
            if out.returncode == 0 and out.stdout.strip() in ("idle", "mix"):
                return
            time.sleep(0.5)
        self.stop()
        log = (r / "log" / "slurmctld.log").read_text()[-800:]
        raise RuntimeError(f"the local Slurm cluster did not come up: {log}")

    def stop(self) -> None:
        for pidfile in reversed(self.pidfiles):
            try:
                pid = int(pidfile.read_text().strip())
            except (OSError, ValueError):
                continue
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                continue
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                try:
                    os.kill(pid, 0)
                except ProcessLookupError:
                    break
                time.sleep(0.1)
            else:
                os.kill(pid, signal.SIGKILL)
        shutil.rmtree(self.root, ignore_errors=True)
