"""SimGrid's simulated clusters: the platform files SMPI runs on, written and read.

A user names a cluster in a few words (nodes, cores a node, topology, link bandwidth and
latency) and :func:`write_cluster` writes the SimGrid platform file and the hostfile
``smpirun`` takes (one line a core, nodes in order: ranks fill a node before the next). A
platform the user wrote is read by :func:`read_platform` (its hosts and a digest: the study's
platform fingerprint is the simulated cluster's). :func:`launch_files` finds the platform,
the hostfile and the rank count in an ``smpirun`` line and refuses, in one line each, what
would make every run fail: no platform, a platform that does not parse, more ranks than the
hostfile has lines, a host the platform does not have, a program built with a real MPI's
compiler.

The topologies are SimGrid's own cluster kinds (``<cluster topology=...>``): a two-level fat
tree (``fat-tree``; ``taper`` divides the leaf switches' uplinks: 1 is full bisection), a
3-D torus (``torus``), a dragonfly (``dragonfly``) and a flat cluster whose nodes' links
meet at one switch (``flat``: a test bed's bridge; non-blocking, every flow at its link's
rate, unless ``backbone`` gives the switch's bandwidth, which its flows then share).
"""

from __future__ import annotations

import hashlib
import math
import os
import re
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass

from commtune.errors import UsageError

TOPOLOGIES = ("fat-tree", "torus", "dragonfly", "flat")
# What a user does before a program runs on a simulated cluster
BUILD_HINT = "build the program with smpicc (smpicxx, smpif90)"
HOST_PREFIX = "node-"
CONFIGURATION_FILE = "smpi.cfg"  # the simulator's configuration, one --cfg= a line


@dataclass(frozen=True)
class Cluster:
    """A simulated cluster as a user describes it."""

    nodes: int
    cores: int = 1
    topology: str = "fat-tree"
    bandwidth: str = "12.5GBps"  # a node's link (100 Gb/s)
    latency: str = "1us"
    speed: str = "100Gf"  # a core's compute speed (what SMPI scales compute bursts to)
    taper: int = 1  # fat tree: the leaf switches' uplinks divided by this
    backbone: str | None = None  # flat: the switch's shared bandwidth (None: non-blocking)
    # ranks of one node: the node's own link (None: a network link's, as SimGrid's default)
    loopback_bandwidth: str | None = None
    loopback_latency: str | None = None

    def check(self) -> None:
        if self.nodes < 1 or self.cores < 1:
            raise UsageError("a cluster needs at least one node of at least one core")
        if self.topology not in TOPOLOGIES:
            raise UsageError(f"--topology {self.topology}: one of {', '.join(TOPOLOGIES)}")
        if self.taper < 1:
            raise UsageError("--taper: at least 1 (1 is full bisection)")
        for what, text, unit in (("--bandwidth", self.bandwidth, "Bps"),
                                 ("--backbone", self.backbone or "1Bps", "Bps"),
                                 ("--latency", self.latency, "s"),
                                 ("--speed", self.speed, "f"),
                                 ("--bandwidth", self.loopback_bandwidth or "1Bps", "Bps"),
                                 ("--latency", self.loopback_latency or "1s", "s")):  # fmt: skip
            if not re.fullmatch(r"[0-9]+(\.[0-9]+)?([kKMGTPEmunp]i?)?(" + unit + r"|bps)?", text):
                raise UsageError(
                    f"{what} {text}: expected a number with a unit, e.g. {_EXAMPLES[what]}"
                )

    def topology_parameters(self) -> tuple[str | None, str | None]:
        """(SimGrid's ``topology``, its ``topo_parameters``) of this cluster."""
        n = self.nodes
        if self.topology == "flat":
            return None, None
        if self.topology == "torus":
            return "TORUS", ",".join(map(str, _factors(n, 3)))
        if self.topology == "dragonfly":
            groups, chassis, routers, per_router = _factors(n, 4)
            return "DRAGONFLY", f"{groups},1;{chassis},1;{routers},1;{per_router}"
        leaf = _divisor_near_root(n)
        tops = max(1, leaf // self.taper)
        return "FAT_TREE", f"2;{leaf},{n // leaf};1,{tops};1,1"

    def platform_xml(self) -> str:
        topology, parameters = self.topology_parameters()
        shape = (
            f' topology="{topology}" topo_parameters="{parameters}"'
            if topology
            else f' bb_bw="{self.backbone or self.bandwidth}" bb_lat="0us"'
            # no backbone given: a non-blocking switch (SimGrid's fat pipe: flows do not
            # share it), not one link's bandwidth shared by every flow in the cluster
            + ("" if self.backbone else ' bb_sharing_policy="FATPIPE"')
        )
        return (
            "<?xml version='1.0'?>\n"
            '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">\n'
            f"<!-- written by commtune: {self.describe()} -->\n"
            '<platform version="4.1">\n'
            f'  <cluster id="cluster" prefix="{HOST_PREFIX}" suffix="" '
            f'radical="0-{self.nodes - 1}" speed="{self.speed}" core="{self.cores}" '
            f'bw="{self.bandwidth}" lat="{self.latency}" sharing_policy="SPLITDUPLEX" '
            f'loopback_bw="{self.loopback_bandwidth or self.bandwidth}" '
            f'loopback_lat="{self.loopback_latency or self.latency}"{shape}/>\n'
            "</platform>\n"
        )

    def hostfile(self) -> str:
        return "".join(f"{HOST_PREFIX}{i}\n" for i in range(self.nodes) for _ in range(self.cores))

    def describe(self) -> str:
        shape = self.topology + (f" (taper {self.taper}:1)" if self.taper > 1 else "")
        cores = f"{self.cores} core" + ("s" if self.cores > 1 else "")
        return f"{self.nodes} nodes x {cores}, {shape}, links {self.bandwidth} {self.latency}"


_EXAMPLES = {
    "--bandwidth": "12.5GBps or 100Gbps",
    "--backbone": "100Gbps",
    "--latency": "1us",
    "--speed": "100Gf",
}


def _divisor_near_root(n: int) -> int:
    """The largest divisor of ``n`` not above its square root (a fat tree's leaf radix)."""
    return max(d for d in range(1, math.isqrt(n) + 1) if n % d == 0)


def _factors(n: int, k: int) -> list[int]:
    """``n`` as ``k`` factors as near each other as its divisors allow (largest first)."""
    out = []
    for left in range(k, 1, -1):
        root = round(n ** (1 / left))
        d = next((d for d in range(max(1, root), 0, -1) if n % d == 0), 1)
        out.append(d)
        n //= d
    out.append(n)
    return sorted(out, reverse=True)


def launch_line(platform: str, hostfile: str, ranks: int) -> list[str]:
    """The ``smpirun`` line that runs ``ranks`` ranks on a written cluster (program after)."""
    return ["smpirun", "-np", str(ranks), "-platform", platform, "-hostfile", hostfile]


def write_cluster(cluster: Cluster, directory: str) -> tuple[str, str]:
    """Write ``platform.xml`` and ``hosts`` for ``cluster`` into ``directory``; their paths."""
    from commtune.util import write_atomic

    cluster.check()
    os.makedirs(directory, exist_ok=True)
    platform = os.path.join(directory, "platform.xml")
    hosts = os.path.join(directory, "hosts")
    write_atomic(platform, cluster.platform_xml())
    write_atomic(hosts, cluster.hostfile())
    return platform, hosts


@dataclass(frozen=True)
class Platform:
    """A platform file as SMPI would read it: its hosts and a digest of its text."""

    path: str
    hosts: frozenset[str]
    digest: str
    comment: str  # what commtune wrote into it, or the file's name


def _radical(text: str) -> list[int]:
    out: list[int] = []
    for part in text.split(","):
        low, _, high = part.partition("-")
        out.extend(range(int(low), int(high or low) + 1))
    return out


def read_platform(path: str) -> Platform:
    """The platform file at ``path``; UsageError if it is missing or does not parse."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as exc:
        raise UsageError(f"platform {path}: {exc.strerror or exc}") from None
    try:
        root = ET.fromstring(data)
    except ET.ParseError as exc:
        raise UsageError(f"platform {path} does not parse: {exc}") from None
    if root.tag != "platform":
        raise UsageError(f"platform {path}: not a SimGrid platform (its root is <{root.tag}>)")
    hosts: set[str] = set()
    try:
        for el in root.iter():
            if el.tag == "host" and "id" in el.attrib:
                hosts.add(el.attrib["id"])
            elif el.tag == "cluster":
                prefix, suffix = el.get("prefix", ""), el.get("suffix", "")
                hosts.update(f"{prefix}{i}{suffix}" for i in _radical(el.get("radical", "")))
    except ValueError:
        raise UsageError(
            f"platform {path}: a cluster's radical is not a range of numbers"
        ) from None
    match = re.search(rb"<!-- written by commtune: (.*?) -->", data)
    comment = match.group(1).decode() if match else os.path.basename(path)
    return Platform(path, frozenset(hosts), hashlib.sha256(data).hexdigest()[:12], comment)


_SIMULATED = "simulated: "  # how a simulated cluster's nodes are stored


@dataclass(frozen=True)
class Launch:
    """What an ``smpirun`` line runs: ranks, platform, hostfile, program."""

    ranks: int | None
    platform: Platform
    hostfile: str | None
    program: str | None

    def describe(self) -> str:
        ranks = f"{self.ranks} ranks" if self.ranks else "ranks from the hostfile"
        return f"{_SIMULATED}{ranks} on {self.platform.comment} (platform {self.platform.digest})"

    @property
    def cluster(self) -> str:
        """The simulated cluster alone, whatever the rank count: the platform a model
        trained at several rank counts is stored under."""
        return f"{_SIMULATED}{self.platform.comment} (platform {self.platform.digest})"


def nodes_words(nodes: str | None) -> str:
    """Stored nodes (``Launch.describe``, or Slurm's node list) in the words of the command
    that made them: a simulated cluster as ``commtune cluster`` describes it, else Slurm's."""
    if not nodes:
        return ""
    if nodes.startswith(_SIMULATED):
        return f"; runs on a simulated cluster: {nodes.removeprefix(_SIMULATED)}"
    return f"; Slurm nodes: {nodes}"


_WITH_VALUE = {"-np", "-n", "-platform", "-hostfile", "-machinefile", "-bandwidth", "-latency",
               "-replay", "-trace-comment", "-trace-comment-file", "-trace-file", "-wrapper",
               "-ext", "-speed"}  # fmt: skip


def launch_files(command: Sequence[str]) -> Launch:
    """The platform, hostfile, ranks and program of the ``smpirun`` line ``command``, each
    checked (see the module docstring); UsageError naming the first problem."""
    args = list(command[1:])
    found: dict[str, str] = {}
    program = None
    i = 0
    while i < len(args):
        a = args[i]
        if a in _WITH_VALUE and i + 1 < len(args):
            found[a] = args[i + 1]
            i += 2
            continue
        if a.startswith("-"):
            i += 1
            continue
        program = a
        break
    if "-platform" not in found:
        raise UsageError("smpirun needs a simulated cluster: add -platform FILE "
                         "(write one with: commtune cluster --nodes N --out DIR)")  # fmt: skip
    platform = read_platform(found["-platform"])
    ranks = None
    text = found.get("-np", found.get("-n"))
    if text is not None:
        if not text.isdigit() or int(text) < 1:
            raise UsageError(f"smpirun -np {text}: expected a number of ranks")
        ranks = int(text)
    hostfile = found.get("-hostfile", found.get("-machinefile"))
    if hostfile is not None:
        slots = _hostfile_slots(hostfile)
        missing = sorted(set(slots) - platform.hosts)
        if missing:
            raise UsageError(f"hostfile {hostfile} names {missing[0]}, which platform "
                             f"{platform.path} has not")  # fmt: skip
        if ranks is not None and ranks > len(slots):
            raise UsageError(f"smpirun -np {ranks}: more ranks than hostfile {hostfile} "
                             f"allows ({len(slots)} lines)")  # fmt: skip
    if program is not None:
        _check_program(program)
    return Launch(ranks, platform, hostfile, program)


def grown(command: Sequence[str], factor: int, directory: str) -> list[str]:
    """The ``smpirun`` line ``command`` at ``factor`` times its ranks, on its cluster grown
    as much (written into ``directory``: the cluster's nodes, its topology's parameters
    made anew, every other attribute kept, a calibration's configuration file beside it
    copied), each node as many
    ranks as the hostfile gave the first; UsageError where the platform is not one
    ``<cluster>`` or the line names no rank count and hostfile."""
    found = launch_files(command)
    if found.ranks is None or found.hostfile is None:
        raise UsageError("the simulated line needs -np and -hostfile to be grown")
    with open(found.platform.path) as f:
        text = f.read()
    clusters = re.findall(r"<cluster\b[^>]*>", text)
    if len(clusters) != 1 or re.search(r"<(host|zone|AS)\b", text):
        raise UsageError(f"platform {found.platform.path} is not one <cluster>: commtune "
                         "cannot grow it")  # fmt: skip
    old = clusters[0]
    attrs = dict(re.findall(r'(\w+)="([^"]*)"', old))
    nodes = len(_radical(attrs.get("radical", "0")))
    slots = _hostfile_slots(found.hostfile)
    per_node = slots.count(slots[0])
    new = re.sub(r'radical="[^"]*"', f'radical="0-{nodes * factor - 1}"', old)
    topology = {"FAT_TREE": "fat-tree", "TORUS": "torus", "DRAGONFLY": "dragonfly"}.get(
        attrs.get("topology", "")
    )
    if topology is not None:
        taper = _taper(text, attrs) if topology == "fat-tree" else 1
        _, parameters = Cluster(nodes * factor, topology=topology,
                                taper=taper).topology_parameters()  # fmt: skip
        new = re.sub(r'topo_parameters="[^"]*"', f'topo_parameters="{parameters}"', new)
    text = text.replace(old, new).replace(
        "<!-- written by commtune: ", f"<!-- written by commtune: x{factor} of ", 1
    )
    os.makedirs(directory, exist_ok=True)
    platform = os.path.join(directory, "platform.xml")
    hosts = os.path.join(directory, "hosts")
    prefix, suffix = attrs.get("prefix", ""), attrs.get("suffix", "")
    from commtune.util import write_atomic

    write_atomic(platform, text)
    beside = os.path.join(os.path.dirname(os.path.abspath(found.platform.path)),
                          CONFIGURATION_FILE)  # fmt: skip
    if os.path.isfile(beside):  # a calibration's --cfg= lines go with the cluster
        with open(beside) as f:
            write_atomic(os.path.join(directory, CONFIGURATION_FILE), f.read())
    write_atomic(hosts, "".join(f"{prefix}{i}{suffix}\n" * per_node
                                for i in range(nodes * factor)))  # fmt: skip
    out, args = [command[0]], list(command[1:])
    i = 0
    while i < len(args):
        a = args[i]
        if a in ("-np", "-n", "-platform", "-hostfile", "-machinefile") and i + 1 < len(args):
            value = {"-np": str(found.ranks * factor), "-n": str(found.ranks * factor),
                     "-platform": platform}.get(a, hosts)  # fmt: skip
            out += [a, value]
            i += 2
            continue
        out.append(a)
        if a in _WITH_VALUE and i + 1 < len(args):
            out.append(args[i + 1])
            i += 1
        elif not a.startswith("-"):
            out += args[i + 1 :]
            break
        i += 1
    return out


def _taper(text: str, attrs: dict[str, str]) -> int:
    """A fat tree's taper: as commtune's comment says it (``(taper 2:1)``), else as its
    parameters ``2;leaf,spines;1,tops;1,1`` give it (``leaf // tops``: exact only where
    ``tops`` was not rounded, so the comment first)."""
    said = re.search(r"\(taper (\d+):1\)", text)
    if said:
        return int(said.group(1))
    if "<!-- written by commtune: " in text:
        return 1  # commtune says the taper where there is one
    parts = attrs.get("topo_parameters", "").split(";")
    try:
        return max(1, int(parts[1].split(",")[0]) // int(parts[2].split(",")[1]))
    except (IndexError, ValueError, ZeroDivisionError):
        return 1


def _hostfile_slots(path: str) -> list[str]:
    try:
        with open(path) as f:
            lines = [line.strip() for line in f if line.strip()]
    except OSError as exc:
        raise UsageError(f"hostfile {path}: {exc.strerror or exc}") from None
    slots = []
    for line in lines:
        name, _, count = line.partition(":")
        slots.extend([name] * (int(count) if count.isdigit() else 1))
    return slots


def _check_program(program: str) -> None:
    """A program built for SMPI links SimGrid; one built by a real MPI's compiler links
    ``libmpi``: SMPI would start it as one plain MPI process a rank and fail."""
    from shutil import which

    path = program if os.sep in program else which(program)
    if not path or not os.path.isfile(path):
        return  # a script or a name the shell resolves: smpirun says what it finds
    try:
        with open(path, "rb") as f:
            head = f.read(4)
            if head != b"\x7fELF":
                return
            data = f.read()
    except OSError:
        return
    if b"libsimgrid" not in data and re.search(rb"libmpi(ch)?(_\w+)?\.so", data):
        raise UsageError(f"{program} was built with a real MPI's compiler: rebuild it with "
                         "smpicc (or smpicxx, smpif90) to run it under SMPI")  # fmt: skip
