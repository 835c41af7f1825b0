"""The test bed: N nodes x R rails on this machine, as root, from what Linux has.

- A node is a network namespace (``ip netns``) and a UTS namespace of its own (its
  hostname), kept by bind mounts under the bed's state directory; the mount namespace is
  shared, so every node sees the same files (a shared file system, as on a cluster).
- A rail is a bridge inside the bed's switch namespace; each node joins it through a veth
  pair (``eth<r>`` in the node, address ``10.78.<r>.<node>``), shaped on the node's side
  with ``tc tbf`` where a rate is given (``netem`` is not available in this kernel, so no
  latency is added). Nothing is in the root namespace and nothing is routed: the bed talks
  to itself alone.
- Hostnames resolve through a block of ``/etc/hosts`` marked with the bed's name (the first
  rail's addresses).
- ``agent``: a script behaving like ``ssh HOST COMMAND``: it skips ssh's options (hydra
  passes some first), then runs the line inside the node's namespaces.

Every bed writes its owner (pid and start time) in its state directory; a bring-up first
tears down every bed whose owner is gone (after a ``kill -9``), and ``down()`` removes the
namespaces (killing what runs in them), the links, the hosts block and the state directory.
A bed brought up to stay (``up(keep=True)``, ``commtune bed up``) has no owner process: it
stays until ``down``; ``exec`` runs a command in its first node, recorded in the state
directory while it runs, and whatever a killed ``exec`` left running in the nodes is killed
by the next ``up``, ``exec`` or ``down`` (:func:`reap`).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import signal
import subprocess
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from commtune.errors import UsageError
from commtune.mpi import Installation
from commtune.util import TESTBED_ENV, same_process, start_time

BED_PREFIX = "ctb"
STATE_ROOT = Path("/run/commtune-testbed")
NETNS_DIR = Path("/var/run/netns")
HOSTS = Path("/etc/hosts")
SUBNET = "10.78"
KEEP = "keep"  # the owner of a bed brought up to stay


@dataclass(frozen=True)
class Node:
    """One node: its hostname (also its network namespace's name) and an address per rail."""

    name: str
    index: int
    addresses: tuple[str, ...]

    @property
    def address(self) -> str:
        return self.addresses[0]


def available() -> tuple[bool, str]:
    """Whether a bed can be brought up here, and why not."""
    if os.geteuid() != 0:
        return False, "the test bed needs root (network namespaces, veth links, tc)"
    for tool in ("ip", "unshare", "nsenter", "tc"):
        if shutil.which(tool) is None:
            return False, f"the test bed needs {tool} (iproute2, util-linux)"
    probe = f"{BED_PREFIX}probe{os.getpid()}"
    done = _run(["ip", "netns", "add", probe])
    _run(["ip", "netns", "del", probe])
    if done.returncode != 0:
        return False, f"cannot create a network namespace: {done.stderr.strip()}"
    return True, ""


def _run(argv: Sequence[str], check: bool = False) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(list(argv), capture_output=True, text=True, check=False)
    if check and done.returncode != 0:
        raise UsageError(f"test bed: {' '.join(argv)}: {done.stderr.strip() or 'failed'}")
    return done


@dataclass
class Cluster:
    """``nodes`` nodes with ``rails`` rails each; ``rates``: Mbit/s per rail (None: not
    shaped). A context manager: ``with Cluster(4, 2) as bed: ...``."""

    nodes: int = 2
    rails: int = 1
    rates: Sequence[float | None] | None = None
    name: str = field(default_factory=lambda: f"{BED_PREFIX}{os.getpid() % 100000}")
    members: list[Node] = field(default_factory=list, init=False)

    def __post_init__(self) -> None:
        if not 1 <= self.nodes <= 8 or not 1 <= self.rails <= 4:
            raise UsageError("a test bed has 1-8 nodes and 1-4 rails")
        if self.rates is not None and len(self.rates) != self.rails:
            raise UsageError(f"{len(self.rates)} rates for {self.rails} rails")

    @property
    def state(self) -> Path:
        return STATE_ROOT / self.name

    @property
    def switch(self) -> str:
        return f"{self.name}sw"

    @property
    def agent(self) -> str:
        """The remote-shell agent (``ssh``-like) of this bed."""
        return str(self.state / "agent")

    @property
    def hostnames(self) -> list[str]:
        return [n.name for n in self.members]

    # -- bring-up and teardown ------------------------------------------------------------
    def up(self, keep: bool = False) -> Cluster:
        """Bring the bed up, owned by this process (gone with it), or with ``keep`` to stay
        until :meth:`down`."""
        ok, why = available()
        if not ok:
            raise UsageError(why)
        cleanup_stale()
        if self.state.exists():
            raise UsageError(f"test bed {self.name} is up already (its owner is alive)")
        self.state.mkdir(parents=True)
        owner = KEEP if keep else f"{os.getpid()} {start_time(os.getpid())}"
        (self.state / "owner").write_text(owner + "\n")
        try:
            self._build()
        except BaseException:
            self.down()
            raise
        (self.state / "bed.json").write_text(json.dumps(self.to_json()))
        return self

    def to_json(self) -> dict[str, object]:
        return {"name": self.name, "nodes": self.nodes, "rails": self.rails,
                "rates": None if self.rates is None else list(self.rates),
                "members": [[n.name, n.index, list(n.addresses)] for n in self.members],
                "kept": (self.state / "owner").read_text().strip() == KEEP,
                "description": self.describe()}  # fmt: skip

    @classmethod
    def load(cls, name: str) -> Cluster:
        """The bed ``name`` that is up (brought up by another process)."""
        try:
            data = json.loads((STATE_ROOT / name / "bed.json").read_text())
        except (OSError, ValueError):
            raise UsageError(f"no test bed {name} is up (commtune bed up)") from None
        bed = cls(int(data["nodes"]), int(data["rails"]), data["rates"], name=name)
        bed.members = [Node(n, int(i), tuple(a)) for n, i, a in data["members"]]
        return bed

    def execute(self, argv: Sequence[str], env: dict[str, str]) -> int:
        """``argv`` run in the first node with ``env``, recorded while it runs (a ``kill
        -9`` of this process leaves a record whose owner is gone: :func:`reap`); its exit
        status, or 128 + the signal that ended it."""
        reap(self.name)
        record = self.state / f"exec.{os.getpid()}"
        record.write_text(f"{os.getpid()} {start_time(os.getpid())}\n")
        try:
            child = subprocess.Popen(self.command(self.hostnames[0], argv), env=env,
                                     start_new_session=True)  # fmt: skip
            try:
                code = child.wait()
            except BaseException:  # Ctrl-C, SIGTERM: the command goes with us
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(child.pid, signal.SIGKILL)
                child.wait()
                raise
        finally:
            record.unlink(missing_ok=True)
            reap(self.name)
        return code if code >= 0 else 128 - code

    def _build(self) -> None:
        _run(["ip", "netns", "add", self.switch], check=True)
        _run(["ip", "-n", self.switch, "link", "set", "lo", "up"], check=True)
        for r in range(self.rails):
            _run(["ip", "-n", self.switch, "link", "add", f"br{r}", "type", "bridge"], check=True)
            _run(["ip", "-n", self.switch, "link", "set", f"br{r}", "up"], check=True)
        for i in range(1, self.nodes + 1):
            host = f"{self.name}n{i}"
            uts = self.state / f"{host}.uts"
            uts.touch()
            _run(["unshare", f"--uts={uts}", "hostname", host], check=True)
            _run(["ip", "netns", "add", host], check=True)
            _run(["ip", "-n", host, "link", "set", "lo", "up"], check=True)
            addresses = []
            for r in range(self.rails):
                inside, outside = f"{self.name}i{i}r{r}", f"n{i}r{r}"
                _run(["ip", "link", "add", inside, "type", "veth", "peer", "name", outside,
                      "netns", self.switch], check=True)  # fmt: skip
                _run(["ip", "link", "set", inside, "netns", host], check=True)
                _run(["ip", "-n", host, "link", "set", inside, "name", f"eth{r}"], check=True)
                address = f"{SUBNET}.{r}.{i}"
                _run(["ip", "-n", host, "addr", "add", f"{address}/24", "dev", f"eth{r}"],
                     check=True)  # fmt: skip
                _run(["ip", "-n", host, "link", "set", f"eth{r}", "up"], check=True)
                _run(["ip", "-n", self.switch, "link", "set", outside, "master", f"br{r}"],
                     check=True)  # fmt: skip
                _run(["ip", "-n", self.switch, "link", "set", outside, "up"], check=True)
                rate = self.rates[r] if self.rates is not None else None
                if rate is not None:
                    _run(["ip", "netns", "exec", host, "tc", "qdisc", "add", "dev", f"eth{r}",
                          "root", "tbf", "rate", f"{rate}mbit", "burst", "256kb", "latency",
                          "100ms"], check=True)  # fmt: skip
                addresses.append(address)
            self.members.append(Node(host, i, tuple(addresses)))
        _add_hosts(self.name, self.members)
        self._write_agent()
        (self.state / "hostfile").write_text("".join(f"{n.name}\n" for n in self.members))

    def _write_agent(self) -> None:
        by_address = "\n".join(
            f"    {a}) host={n.name} ;;" for n in self.members for a in n.addresses
        )
        script = f"""#!/bin/sh
# commtune test bed {self.name}: like 'ssh HOST COMMAND', inside the node's namespaces
while [ $# -gt 0 ]; do
  case "$1" in
    -o|-p|-l|-i|-F|-E|-b|-c|-D|-e|-I|-J|-L|-m|-O|-Q|-R|-S|-W|-w) shift 2 ;;
    -*) shift ;;
    *) break ;;
  esac
done
host=${{1#*@}}; shift
case "$host" in
{by_address}
esac
[ -e "{NETNS_DIR}/$host" ] || {{ echo "test bed {self.name}: no node $host" >&2; exit 255; }}
exec nsenter --net="{NETNS_DIR}/$host" --uts="{self.state}/$host.uts" -- /bin/sh -c "$*"
"""
        path = Path(self.agent)
        path.write_text(script)
        path.chmod(0o755)

    def down(self) -> None:
        teardown(self.name)
        self.members = []

    def __enter__(self) -> Cluster:
        return self.up()

    def __exit__(self, *exc: object) -> None:
        self.down()

    @property
    def devices(self) -> list[str]:
        """The network interfaces every node has, one per rail."""
        return [f"eth{r}" for r in range(self.rails)]

    def network_env(self, installation: Installation) -> dict[str, str]:
        """What a launch of ``installation`` across the bed needs so that it uses the network
        between nodes, as between real ones (:meth:`MPIVendor.network_env`)."""
        return installation.impl.network_env(self.devices)

    def describe(self) -> str:
        rates = ("unshaped" if self.rates is None else
                 "/".join(f"{r:g}" if r else "-" for r in self.rates) + " Mbit/s")  # fmt: skip
        return f"test bed: {self.nodes} nodes x {self.rails} rails ({rates})"

    def site_env(self, installation: Installation) -> dict[str, str]:
        """What a command run inside a node needs to use the bed as a cluster: the network
        between nodes (:meth:`network_env`), and a plain launch line (``mpirun -n 4 ./app``)
        spread over the nodes as an allocation's environment would (the bed's hostfile and
        agent, :meth:`MPIVendor.hosts_env`); ``COMMTUNE_TESTBED`` names the bed, so that what
        is measured there is stored as another platform than this machine."""
        return {**self.network_env(installation),
                **installation.impl.hosts_env(str(self.state / "hostfile"), self.agent),
                TESTBED_ENV: self.describe()}  # fmt: skip

    def launch(self, installation: Installation, program: Sequence[str],
               nodes: int | None = None) -> list[str]:  # fmt: skip
        """A launch line of ``program`` on the first ``nodes`` nodes (all: None), one rank
        each, to run on the first node (:meth:`run`), with :meth:`network_env`."""
        hosts = self.hostnames[: nodes or len(self.members)]
        impl = installation.impl
        return [installation.launcher, *impl.local_options(),
                *impl.remote_args(hosts, self.agent), "-n", str(len(hosts)), *program]  # fmt: skip

    # -- running on a node ---------------------------------------------------------------
    def command(self, node: str, argv: Sequence[str]) -> list[str]:
        """``argv`` run inside ``node``'s namespaces (its network and hostname)."""
        return ["nsenter", f"--net={NETNS_DIR / node}", f"--uts={self.state / node}.uts",
                "--", *argv]  # fmt: skip

    def run(self, node: str, argv: Sequence[str], timeout: float = 120,
            env: dict[str, str] | None = None,
            cwd: str | Path | None = None) -> subprocess.CompletedProcess[str]:  # fmt: skip
        return subprocess.run(self.command(node, argv), capture_output=True, text=True,
                              timeout=timeout, check=False, env=env, cwd=cwd)  # fmt: skip


def rerun_inside(nodes: int, installations: Sequence[Installation],
                 argv: Sequence[str]) -> int:  # fmt: skip
    """``argv`` (a benchmark run again) inside the first node of a new bed of ``nodes`` nodes
    with every installation's site environment (their variables do not overlap); its exit
    code. The bed goes when it ends."""
    with Cluster(nodes, 1) as bed:
        env = dict(os.environ)
        for installation in installations:
            env.update(bed.site_env(installation))
        done = subprocess.run(bed.command(bed.hostnames[0], argv), env=env, check=False)
    return done.returncode


@contextlib.contextmanager
def _hosts_locked() -> Iterator[None]:
    """Two beds edit /etc/hosts one at a time (a lost block is a node whose name does not
    resolve: a launch across it hangs)."""
    STATE_ROOT.mkdir(parents=True, exist_ok=True)
    with open(STATE_ROOT / "hosts.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _add_hosts(bed: str, nodes: Sequence[Node]) -> None:
    lines = [f"# commtune-testbed {bed} begin"]
    lines += [f"{n.address}\t{n.name}" for n in nodes]
    lines.append(f"# commtune-testbed {bed} end")
    with _hosts_locked():
        text = HOSTS.read_text() if HOSTS.exists() else ""
        if text and not text.endswith("\n"):
            text += "\n"
        HOSTS.write_text(text + "\n".join(lines) + "\n")  # in place: it may be a mount


def _remove_hosts(bed: str) -> None:
    with _hosts_locked():
        if not HOSTS.exists():
            return
        out, skipping = [], False
        for line in HOSTS.read_text().splitlines():
            if line == f"# commtune-testbed {bed} begin":
                skipping = True
            elif line == f"# commtune-testbed {bed} end":
                skipping = False
            elif not skipping:
                out.append(line)
        HOSTS.write_text("\n".join(out) + "\n")


def _namespaces(bed: str) -> list[str]:
    if not NETNS_DIR.exists():
        return []
    return sorted(p.name for p in NETNS_DIR.iterdir()
                  if p.name.startswith(bed) and p.name[len(bed):][:1] in ("n", "s"))  # fmt: skip


def teardown(bed: str) -> None:
    """Remove bed ``bed`` whole: kill what runs in its namespaces, delete them (the links
    go with them), its hosts block, its hostnames' mounts and its state directory."""
    _kill_inside(bed)
    for ns in _namespaces(bed):
        _run(["ip", "netns", "del", ns])
    _remove_hosts(bed)
    state = STATE_ROOT / bed
    if state.exists():
        for uts in state.glob("*.uts"):
            _run(["umount", str(uts)])
        shutil.rmtree(state, ignore_errors=True)


def _alive(record: Path) -> bool:
    """Whether the process a record (``owner``, ``exec.*``) names still runs."""
    try:
        text = record.read_text().strip()
        if text == KEEP:
            return True
        pid_text, start = text.split()
        return same_process(int(pid_text), start)
    except (OSError, ValueError):
        return False


def _kill_inside(bed: str) -> list[int]:
    """Kill every process in bed ``bed``'s namespaces; their pids."""
    killed = []
    for ns in _namespaces(bed):
        for pid in _run(["ip", "netns", "pids", ns]).stdout.split():
            with contextlib.suppress(ProcessLookupError, ValueError):
                os.kill(int(pid), signal.SIGKILL)
                killed.append(int(pid))
    return killed


def reap(bed: str) -> list[int]:
    """What a killed ``exec`` of bed ``bed`` left: with no ``exec`` of it alive, every
    process in its nodes is an orphan and is killed; the pids killed."""
    state = STATE_ROOT / bed
    records = list(state.glob("exec.*")) if state.exists() else []
    live = [r for r in records if _alive(r)]
    for r in records:
        if r not in live:
            r.unlink(missing_ok=True)
    return [] if live else _kill_inside(bed)


def beds() -> list[str]:
    """The names of the beds that are up (their state directories)."""
    if not STATE_ROOT.exists():
        return []
    return sorted(p.name for p in STATE_ROOT.iterdir() if (p / "owner").exists())


def running(bed: str) -> list[int]:
    """The processes running in bed ``bed``'s nodes."""
    return [int(pid) for ns in _namespaces(bed) if not ns.endswith("sw")
            for pid in _run(["ip", "netns", "pids", ns]).stdout.split()]  # fmt: skip


def cleanup_stale() -> list[str]:
    """Tear down every bed whose owner is gone, and reap what killed commands left in
    the beds brought up to stay (:func:`reap`); the names removed."""
    removed: list[str] = []
    if not STATE_ROOT.exists():
        return removed
    for state in STATE_ROOT.iterdir():
        if not state.is_dir():  # the hosts lock
            continue
        if not _alive(state / "owner"):
            teardown(state.name)
            removed.append(state.name)
        elif (state / "owner").read_text().strip() == KEEP:
            reap(state.name)
    return removed
