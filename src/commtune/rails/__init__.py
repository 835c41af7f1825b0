"""Multi-rail: split one message over links of different speeds so all chunks end together."""

from commtune.rails._bench import Strategy, bench, summarize
from commtune.rails._plan import Link, bandwidth_weighted, finish_time, split

__all__ = ["Link", "Strategy", "bandwidth_weighted", "bench", "finish_time", "split", "summarize"]
