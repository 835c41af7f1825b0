"""The interposer's profile: reading it (features, operations, PVARs, CVAR read-back) and
setting a run up to write one (``libcommtune`` preloaded, variables to check)."""

from commtune.profile._checks import not_applied
from commtune.profile._guide import Choice, guided, one_sided
from commtune.profile._profile import CvarCheck, HintCheck, Profile, ProfileError, relative_to
from commtune.profile._setup import Profiling
from commtune.profile._trace import from_paje

__all__ = [
    "Choice",
    "CvarCheck",
    "HintCheck",
    "Profile",
    "ProfileError",
    "Profiling",
    "from_paje",
    "guided",
    "not_applied",
    "one_sided",
    "relative_to",
]
