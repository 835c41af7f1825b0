"""What is sampled on each MPI: families of methods, each family the values of one knob.

A family's curves are compared with each other: eager forced against rendezvous forced (the
eager-limit knob at the two ends of its domain), each single-copy mechanism, each algorithm
of a collective, non-contiguous data packed against handed over as a list of blocks (the
IOV density knob at its two ends). Launch-time families need one launch per method
(environment variables); algorithm families switch the algorithm through MPI_T inside one
launch (``runtime``) where the library takes that (``MPIVendor.algorithms_at_run_time``),
else one launch per algorithm; the IOV density is read on every call, so both of its methods
share one launch.

Ranks on several nodes (``across_nodes``: a test bed's) sample the network transport's
protocol limit instead of the shared-memory one, no single-copy mechanism (there is no
memory to share between nodes), and, where the transport has a knob for it, whether small
messages sent back to back are aggregated (its largest and smallest values, launch-time).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from commtune.knobs import Knob, KnobStatus, installed_knobs
from commtune.mpi import Installation

PINGPONG = "pingpong"
VECTOR = "vector"  # a ping-pong of non-contiguous data; its size is the block length
BURST = "burst"  # small messages sent back to back; the time is per message
COLLECTIVES = ("allreduce", "bcast", "reduce", "allgather", "alltoall")
OPERATIONS = (PINGPONG, VECTOR, BURST, *COLLECTIVES)  # sampled unless others are named
# Sampled when named (``--ops alltoallv`` or ``--ops all``): every one adds a sweep of the
# sizes per algorithm, and a program needs the few its profile shows.
MORE_COLLECTIVES = ("alltoallv", "allgatherv", "gather", "scatter", "reduce_scatter_block",
                    "reduce_scatter", "scan", "barrier")  # fmt: skip
ALL_OPERATIONS = (*OPERATIONS, *MORE_COLLECTIVES)

SINGLE_COPY = "single_copy"
PROTOCOL = "protocol"
ALGORITHM = "algorithm"
PACK_OR_IOV = "pack_or_iov"
AGGREGATION = "aggregation"
EAGER, RENDEZVOUS = "eager", "rendezvous"
PACK, IOV = "pack", "iov"
AGGREGATE, SEPARATE = "aggregate", "separate"
VECTOR_TOTAL = 256 << 10  # bytes of one vector message (ct_sample's VECTOR_TOTAL)
# The IOV density knob's value for each method: every block handed over / every one packed.
DENSITY = {PACK: 1 << 30, IOV: 0}

# Smallest message each operation is sampled at: reductions work on doubles; gather and
# all-to-all split the buffer between the ranks; vector blocks from a double's size.
# (reduce-scatters: a double for each of up to 4 ranks).
MIN_SIZE = {"allreduce": 8, "reduce": 8, "allgather": 4, "alltoall": 4, VECTOR: 8,
            "alltoallv": 4, "allgatherv": 4, "gather": 4, "scatter": 4, "scan": 8,
            "reduce_scatter_block": 32, "reduce_scatter": 32}  # fmt: skip
# Largest: a vector's blocks up to a quarter of its message (four blocks); a burst's
# messages up to 8 KiB (small messages are what is aggregated); a barrier has no size (one).
LARGEST = {VECTOR: VECTOR_TOTAL // 4, BURST: 8 << 10, "barrier": 1}


@dataclass(frozen=True)
class Family:
    op: str
    name: str
    knob: Knob
    default: str  # the library's own choice, preferred on ties
    methods: dict[str, dict[str, str]] = field(default_factory=dict)  # method -> environment
    runtime: dict[str, int] = field(default_factory=dict)  # method -> MPI_T value
    env: dict[str, str] = field(default_factory=dict)  # common to every launch

    @property
    def key(self) -> str:
        return f"{self.op}/{self.name}"


def _usable(knob: Knob, installation: Installation) -> bool:
    return knob.requires_device is None or knob.requires_device in installation.device


def families(
    installation: Installation,
    enumerators: dict[str, tuple[str, ...]],
    operations: tuple[str, ...] = OPERATIONS,
    across_nodes: bool = False,
) -> list[Family]:
    """The families to sample, in order (single-copy before protocol: the protocol curves are
    measured with the chosen mechanism). ``enumerators``: algorithm names per knob, in the
    library's numbering (from discovery)."""
    vendor = installation.impl
    # The knobs as installed: a single-copy mechanism this build lacks (Open MPI 4.1 here has
    # cma, emulated, none; the catalog knows knem and xpmem too) would measure whatever the
    # library falls back to, and a sample choosing it would not be a configuration here.
    statuses = installed_knobs(installation)
    catalog = {name: status.knob for name, status in statuses.items()}
    out = _p2p(installation, statuses, operations, across_nodes)
    iov = catalog.get(vendor.iov_knob) if vendor.iov_knob else None
    if VECTOR in operations and iov is not None and statuses[iov.name].available:
        out.append(Family(VECTOR, PACK_OR_IOV, iov, PACK, runtime=dict(DENSITY)))
    agg = catalog.get(vendor.aggregation_knob) if vendor.aggregation_knob else None
    if BURST in operations and across_nodes and agg is not None and statuses[agg.name].available:
        # the network transport's knob: between ranks of one node it does nothing
        low, high = agg.domain()[0], agg.domain()[-1]
        out.append(
            Family(
                BURST,
                AGGREGATION,
                agg,
                AGGREGATE if agg.default == high else SEPARATE,
                methods={
                    AGGREGATE: {agg.env: agg.format(high)},
                    SEPARATE: {agg.env: agg.format(low)},
                },
            )
        )
    out.extend(_collectives(installation, catalog, enumerators, operations))
    return out


def _p2p(installation: Installation, statuses: Mapping[str, KnobStatus],
         operations: tuple[str, ...], across_nodes: bool) -> list[Family]:  # fmt: skip
    """The ping-pong's families: the single-copy mechanism and the eager/rendezvous protocol
    (between nodes, the network's pair of knobs)."""
    vendor = installation.impl
    catalog = {name: status.knob for name, status in statuses.items()}
    out: list[Family] = []
    pairs: tuple[tuple[str | None, str], ...] = (
        vendor.network_p2p_knobs if across_nodes else vendor.p2p_knobs
    )
    pair = next((p for p in pairs if all(statuses[k].available for k in p if k is not None)), None)
    if PINGPONG in operations and pair is not None:
        copy = catalog[pair[0]] if pair[0] is not None else None
        protocol = catalog[pair[1]]
        if copy is not None and _usable(copy, installation) and _usable(protocol, installation):
            out.append(
                Family(
                    PINGPONG,
                    SINGLE_COPY,
                    copy,
                    str(copy.default),
                    methods={str(c): {copy.env: copy.format(c)} for c in copy.domain()},
                )
            )
        if _usable(protocol, installation):
            low, high = protocol.domain()[0], protocol.domain()[-1]
            out.append(
                Family(
                    PINGPONG,
                    PROTOCOL,
                    protocol,
                    EAGER,
                    methods={
                        EAGER: {protocol.env: protocol.format(high)},
                        RENDEZVOUS: {protocol.env: protocol.format(low)},
                    },
                )
            )
    return out


def _collectives(installation: Installation, catalog: Mapping[str, Knob],
                 enumerators: dict[str, tuple[str, ...]],
                 operations: tuple[str, ...]) -> list[Family]:  # fmt: skip
    """Each collective's algorithm family, its algorithms as the library numbers them."""
    vendor = installation.impl
    out: list[Family] = []
    for op in (*COLLECTIVES, *MORE_COLLECTIVES):
        if op not in operations:
            continue
        knob = catalog.get(vendor.algorithm_knob(op))
        names = enumerators.get(knob.name, ()) if knob else ()
        if knob is None or not names:
            continue
        sampled = [n for n in names if n not in vendor.unsampled_algorithms]
        per_launch = {} if vendor.algorithms_at_run_time else {n: {knob.env: n} for n in sampled}
        out.append(
            Family(
                op,
                ALGORITHM,
                knob,
                names[0],  # "ignore" / "auto" / "-1": the library's own decision
                methods=per_launch,
                runtime={n: i for i, n in enumerate(names) if n in sampled},  # its numbers
                env=dict(vendor.algorithm_env),
            )
        )
    return out
