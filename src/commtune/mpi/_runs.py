"""Where a command's runs happen, as the layers above need to know it: what a run kind can do
(traced by the launcher itself, one value per configuration, raced in-run, its wall time a
cost), asked of this record instead of asking whether the installation is a simulator.

:meth:`Installation.runs` makes one for a launch line, :meth:`Installation.runs_on` for
``--platform``/``--hostfile``. A new run kind (a batch system's, a remote machine's) is a
field here and the installation's answer, not a branch in the service or the command line.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from commtune.mpi._simgrid import Launch


@dataclass(frozen=True)
class Runs:
    """The runs of one command: on this machine (or its Slurm jobs) when ``launch`` is None,
    else on the simulated cluster ``launch`` describes (``files``: its platform and hostfile
    where a command was given them rather than a launch line)."""

    launch: Launch | None = None
    files: tuple[str, str] | None = None
    value_note: str = ""  # what a run's value is, where it is not the wall time

    @property
    def nodes(self) -> str | None:
        """The nodes the runs go to, stored with the platform (None: this machine's)."""
        return self.launch.describe() if self.launch is not None else None

    @property
    def model_key(self) -> str | None:
        """The cluster a prediction model is stored under whatever the rank count (None:
        this machine)."""
        return self.launch.cluster if self.launch is not None else None

    @property
    def said(self) -> str | None:
        """One line telling what a run's value is, where that needs saying."""
        return f"{self.nodes}: {self.value_note}" if self.launch and self.value_note else None

    @property
    def traced(self) -> bool:
        """The launcher writes the run's own trace: a profile without the preloaded library."""
        return self.launch is not None  # runs_on's files name a launch too

    @property
    def deterministic(self) -> bool:
        """A configuration's runs give one value (a simulation that leaves computation out):
        one pair beside the defaults is the measurement."""
        return self.traced

    @property
    def in_run(self) -> bool:
        """The program's own calls can be raced inside one run (a preloaded library)."""
        return not self.traced

    @property
    def wall_is_cost(self) -> bool:
        """A run's wall time is what the study cost, not its value (reported apart)."""
        return self.traced
