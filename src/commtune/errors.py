"""The one exception type the CLI turns into a one-line message and exit code 2."""


class UsageError(Exception):
    """Bad input from the user: unknown knob, value outside its domain, bad file or URL, no MPI.

    Raised before anything is written to storage. The CLI prints ``commtune: error: <message>``
    on one line of stderr and exits with status 2.
    """
