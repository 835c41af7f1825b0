"""Platform sampling (NewMadeleine): sample the hardware once, persist it, decide and predict.

``commtune sample`` measures ping-pong and five collectives over message sizes under every
method (protocol, single-copy mechanism, collective algorithm), finds where the curves
cross, and hands back knob values, the library's collective selection file and plots. The
profile is stored under the platform fingerprint and reused until the platform changes.
"""

from commtune.sample._api import (
    Check,
    SampleResult,
    fingerprint_for,
    load_profile,
    sample_platform,
    verify,
)
from commtune.sample._curves import Crossing, Curve, Segment, crossings, segments
from commtune.sample._families import OPERATIONS
from commtune.sample._profile import FamilyCurves, PlatformProfile
from commtune.sample._sampler import parse_output

__all__ = [
    "OPERATIONS",
    "Check",
    "Crossing",
    "Curve",
    "FamilyCurves",
    "PlatformProfile",
    "SampleResult",
    "Segment",
    "crossings",
    "fingerprint_for",
    "load_profile",
    "parse_output",
    "sample_platform",
    "segments",
    "verify",
]
