"""Platform sampling (NewMadeleine): sample the hardware once, persist it, decide and predict.

``commtune sample`` measures ping-pong, non-contiguous ping-pong and five collectives over
message sizes under every method (protocol, single-copy mechanism, pack or iovec, collective
algorithm), finds where the curves
cross, and hands back knob values, the library's collective selection file and plots. The
profile is stored under the platform fingerprint and reused until the platform changes.
"""

from commtune.sample._api import (
    Check,
    SampleResult,
    ThresholdCheck,
    fingerprint_for,
    load_profile,
    sample_platform,
    verify,
    verify_thresholds,
    veto_slower,
)
from commtune.sample._calibrate import CalibrationResult, calibrate, check_order
from commtune.sample._curves import Crossing, Curve, Segment, crossings, segments
from commtune.sample._families import OPERATIONS
from commtune.sample._outputs import builtin_selection
from commtune.sample._profile import FamilyCurves, PlatformProfile
from commtune.sample._sampler import parse_output
from commtune.sample._simulated import DEFAULT_SIM_OPS, SimSample, sample_simulated

__all__ = [
    "DEFAULT_SIM_OPS",
    "OPERATIONS",
    "CalibrationResult",
    "Check",
    "Crossing",
    "Curve",
    "FamilyCurves",
    "PlatformProfile",
    "SampleResult",
    "Segment",
    "SimSample",
    "ThresholdCheck",
    "builtin_selection",
    "calibrate",
    "check_order",
    "crossings",
    "fingerprint_for",
    "load_profile",
    "parse_output",
    "sample_platform",
    "sample_simulated",
    "segments",
    "verify",
    "verify_thresholds",
    "veto_slower",
]
