"""Multi-rail: split one message over links of different speeds so all chunks end together."""

from commtune.rails._plan import Link, bandwidth_weighted, finish_time, split

__all__ = ["Link", "bandwidth_weighted", "finish_time", "split"]
