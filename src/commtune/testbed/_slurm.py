"""Slurm across the test bed: one slurmd in every node (its own hostname and address) under
one slurmctld in the first node, from this machine's packages (Debian: slurmctld, slurmd,
munge). Clients (``srun``, ``sbatch``, a tuner) run inside a node with :meth:`SlurmBed.env`.

The daemons (munged too) run inside the nodes and share one munge socket (a path: every
node sees the same files) and one
configuration; each slurmd's spool, log and pid files carry its node's name (``%n``). They
run inside the bed's namespaces, so its teardown also kills what :meth:`SlurmBed.stop` missed.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

from commtune.errors import UsageError
from commtune.testbed._bed import Cluster

TOOLS = ("munged", "mungekey", "slurmctld", "slurmd", "sinfo", "sbatch", "srun", "scancel")
CTLD_PORT, SLURMD_PORT = 6917, 6918

_CONF = """ClusterName={cluster}
SlurmctldHost={ctld}
SlurmUser=root
SlurmdUser=root
SlurmctldPort={ctld_port}
SlurmdPort={d_port}
AuthType=auth/munge
AuthInfo=socket={base}/munge.sock
CredType=cred/munge
StateSaveLocation={base}/state
SlurmdSpoolDir={base}/spool-%n
SlurmctldPidFile={base}/slurmctld.pid
SlurmdPidFile={base}/slurmd-%n.pid
SlurmctldLogFile={base}/slurmctld.log
SlurmdLogFile={base}/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
{nodes}
PartitionName={partition} Nodes={names} Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
"""


def slurm_conf(
    base: Path,
    nodes: Sequence[tuple[str, str | None]],
    cpus: int,
    *,
    cluster: str,
    feature: str,
    ctld_port: int = CTLD_PORT,
    d_port: int = SLURMD_PORT,
) -> str:
    """A slurm.conf for a cluster of ``nodes`` ((name, address or None: the name
    resolves), the first one the controller too), ``cpus`` each, every node with
    ``feature``, one partition named as the cluster; state, spool, pid and log files under
    ``base`` (a slurmd's carry its node's name). The test bed's and the tests' one-node
    cluster both."""
    head, address = nodes[0]
    lines = "\n".join(
        f"NodeName={name}{f' NodeAddr={addr}' if addr else ''} CPUs={cpus} "
        f"Feature={feature} State=UNKNOWN"
        for name, addr in nodes
    )
    return _CONF.format(
        cluster=cluster, ctld=f"{head}({address})" if address else head, ctld_port=ctld_port,
        d_port=d_port, base=base, nodes=lines, names=",".join(name for name, _ in nodes),
        partition=cluster.removeprefix("commtune-"),
    )  # fmt: skip


def slurm_available() -> tuple[bool, str]:
    missing = [t for t in TOOLS if shutil.which(t) is None]
    if missing:
        return False, f"no {missing[0]} here (Debian: apt-get install slurmctld slurmd munge)"
    return True, ""


class SlurmBed:
    """A Slurm cluster whose nodes are the nodes of ``bed`` (``cpus`` CPUs each)."""

    def __init__(self, bed: Cluster, cpus: int = 1) -> None:
        self.bed = bed
        self.cpus = cpus
        self.base = bed.state / "slurm"
        self.conf = self.base / "slurm.conf"

    @property
    def head(self) -> str:
        """The node the controller runs on, and where clients run."""
        return self.bed.hostnames[0]

    def env(self) -> dict[str, str]:
        """The environment of a client: this one's, with the bed's configuration and no
        variables of an enclosing job."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
        env["SLURM_CONF"] = str(self.conf)
        return env

    def run(self, argv: Sequence[str], timeout: float = 120, node: str | None = None,
            env: dict[str, str] | None = None,
            cwd: str | Path | None = None) -> subprocess.CompletedProcess[str]:  # fmt: skip
        """A client command inside ``node`` (the head node by default), with ``env`` on top
        of :meth:`env`."""
        return self.bed.run(node or self.head, argv, timeout=timeout,
                            env={**self.env(), **(env or {})}, cwd=cwd)  # fmt: skip

    def start(self, timeout: float = 60) -> SlurmBed:
        ok, why = slurm_available()
        if not ok:
            raise UsageError(why)
        (self.base / "state").mkdir(parents=True)
        members = self.bed.members
        self.conf.write_text(slurm_conf(self.base, [(n.name, n.address) for n in members],
                                        self.cpus, cluster="commtune-bed",
                                        feature="commtune-bed"))  # fmt: skip
        key = self.base / "munge.key"
        self._step(["mungekey", "--create", "--keyfile", str(key), "--force"])
        munged = ["munged", "--force", f"--socket={self.base}/munge.sock", f"--key-file={key}",
                  f"--log-file={self.base}/munged.log", f"--pid-file={self.base}/munged.pid",
                  f"--seed-file={self.base}/munged.seed"]  # fmt: skip
        self._step(self.bed.command(self.head, munged))
        self._step(self.bed.command(self.head, ["slurmctld", "-f", str(self.conf)]))
        for node in members:
            (self.base / f"spool-{node.name}").mkdir()
            self._step(self.bed.command(node.name, ["slurmd", "-f", str(self.conf)]))
        deadline = time.monotonic() + timeout
        states: list[str] = []
        while time.monotonic() < deadline:
            states = self.run(["sinfo", "-h", "-N", "-o", "%t"], timeout=30).stdout.split()
            if len(states) == len(members) and all(s == "idle" for s in states):
                return self
            time.sleep(0.5)
        self.stop()
        raise UsageError(f"Slurm did not come up on the test bed (nodes: {states or 'none'})")

    def _step(self, argv: Sequence[str]) -> None:
        done = subprocess.run(list(argv), capture_output=True, text=True, check=False,
                              timeout=60, env=self.env())  # fmt: skip
        if done.returncode != 0:
            self.stop()
            why = (done.stderr or done.stdout).strip().splitlines()
            raise UsageError(f"cannot start Slurm on the test bed: {Path(argv[0]).name}: "
                             f"{why[-1] if why else 'failed'}")  # fmt: skip

    def stop(self) -> None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.run(["scancel", "--quiet", "--user", str(os.getuid())], timeout=30)
        for pid_file in self.base.glob("*.pid"):
            with contextlib.suppress(OSError, ValueError):
                os.kill(int(pid_file.read_text().split()[0]), signal.SIGTERM)
        time.sleep(0.3)

    @contextlib.contextmanager
    def running(self) -> Iterator[SlurmBed]:
        self.start()
        try:
            yield self
        finally:
            self.stop()
