"""What is sampled on each MPI: families of methods, each family the values of one knob.

A family's curves are compared with each other: eager forced against rendezvous forced (the
eager-limit knob at the two ends of its domain), each single-copy mechanism, each algorithm
of a collective. Launch-time families need one launch per method (environment variables);
algorithm families switch the algorithm through MPI_T inside one launch (``runtime``) where
the library takes that (``MPIVendor.algorithms_at_run_time``), else one launch per algorithm.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from commtune.knobs import Knob, installed_knobs
from commtune.mpi import Installation

PINGPONG = "pingpong"
COLLECTIVES = ("allreduce", "bcast", "reduce", "allgather", "alltoall")
OPERATIONS = (PINGPONG, *COLLECTIVES)

SINGLE_COPY = "single_copy"
PROTOCOL = "protocol"
ALGORITHM = "algorithm"
EAGER, RENDEZVOUS = "eager", "rendezvous"

# Smallest message each operation is sampled at: reductions work on doubles; gather and
# all-to-all split the buffer between the ranks.
MIN_SIZE = {"allreduce": 8, "reduce": 8, "allgather": 4, "alltoall": 4}


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
    out: list[Family] = []
    pair = next((p for p in vendor.p2p_knobs if all(statuses[k].available for k in p)), None)
    if PINGPONG in operations and pair is not None:
        copy, protocol = catalog[pair[0]], catalog[pair[1]]
        if _usable(copy, installation) and _usable(protocol, installation):
            out.append(
                Family(
                    PINGPONG,
                    SINGLE_COPY,
                    copy,
                    str(copy.default),
                    methods={str(c): {copy.env: copy.format(c)} for c in copy.domain()},
                )
            )
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
    for op in COLLECTIVES:
        if op not in operations:
            continue
        knob = catalog.get(vendor.algorithm_knob(op))
        names = enumerators.get(knob.name, ()) if knob else ()
        if knob is None or not names:
            continue
        per_launch = {} if vendor.algorithms_at_run_time else {n: {knob.env: n} for n in names}
        out.append(
            Family(
                op,
                ALGORITHM,
                knob,
                names[0],  # "ignore" / "auto" / "-1": the library's own decision
                methods=per_launch,
                runtime={name: i for i, name in enumerate(names)},  # the library's numbers
                env=dict(vendor.algorithm_env),
            )
        )
    return out
