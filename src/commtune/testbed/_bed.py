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
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import signal
import subprocess
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from commtune.errors import UsageError
from commtune.mpi import Installation
from commtune.util import TESTBED_ENV

BED_PREFIX = "ctb"
STATE_ROOT = Path("/run/commtune-testbed")
NETNS_DIR = Path("/var/run/netns")
HOSTS = Path("/etc/hosts")
SUBNET = "10.78"


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


def _start_time(pid: int) -> str | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]  # field 22: start time in clock ticks


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
    def up(self) -> Cluster:
        ok, why = available()
        if not ok:
            raise UsageError(why)
        cleanup_stale()
        if self.state.exists():
            raise UsageError(f"test bed {self.name} is up already (its owner is alive)")
        self.state.mkdir(parents=True)
        (self.state / "owner").write_text(f"{os.getpid()} {_start_time(os.getpid())}\n")
        try:
            self._build()
        except BaseException:
            self.down()
            raise
        return self

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
    for ns in _namespaces(bed):
        pids = _run(["ip", "netns", "pids", ns]).stdout.split()
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, ValueError):
                os.kill(int(pid), signal.SIGKILL)
    for ns in _namespaces(bed):
        _run(["ip", "netns", "del", ns])
    _remove_hosts(bed)
    state = STATE_ROOT / bed
    if state.exists():
        for uts in state.glob("*.uts"):
            _run(["umount", str(uts)])
        shutil.rmtree(state, ignore_errors=True)


def cleanup_stale() -> list[str]:
    """Tear down every bed whose owner is gone; the names removed."""
    removed: list[str] = []
    if not STATE_ROOT.exists():
        return removed
    for state in STATE_ROOT.iterdir():
        if not state.is_dir():  # the hosts lock
            continue
        try:
            pid_text, start = (state / "owner").read_text().split()
            alive = _start_time(int(pid_text)) == start
        except (OSError, ValueError):
            alive = False
        if not alive:
            teardown(state.name)
            removed.append(state.name)
    return removed
