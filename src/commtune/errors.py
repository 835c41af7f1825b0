"""commtune's exceptions: :class:`UsageError` (bad input; the CLI prints one line and exits
with status 2), :class:`RunFailed` (a run a check needed could not run; status 3) and
:class:`Stopped` (a stop signal; the CLI exits with 128 + the signal)."""


class UsageError(Exception):
    """Bad input from the user: unknown knob, value outside its domain, bad file or URL, no MPI.

    Raised before anything is written to storage. The CLI prints ``commtune: error: <message>``
    on one line of stderr and exits with status 2.
    """


class RunFailed(Exception):
    """A run that a check or a verdict needed failed (a missing program or agent, a crash, a
    timeout): it is no measurement, so nothing is concluded and nothing is stored. The CLI
    prints ``commtune: error: <message>`` on one line of stderr and exits with status 3."""


class Stopped(BaseException):
    """SIGTERM or SIGHUP (what ``timeout``, systemd and a batch system's time limit send):
    raised wherever commtune is, so that the running trial's processes are killed, the trial
    is recorded as interrupted and the command exits with 128 + the signal's number."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum
