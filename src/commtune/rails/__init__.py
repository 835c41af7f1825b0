"""Multi-rail: split one message over links of different speeds so all chunks end together."""

from commtune.rails._bench import Strategy, bench, summarize
from commtune.rails._mpi import Transfer, even_shares, pingpong, planned_shares, rail_curves
from commtune.rails._plan import Link, finish_time, split

__all__ = [
    "Link",
    "Strategy",
    "Transfer",
    "bench",
    "even_shares",
    "finish_time",
    "pingpong",
    "planned_shares",
    "rail_curves",
    "split",
    "summarize",
]
