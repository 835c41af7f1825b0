"""commtune: an autotuner for the run-time parameters of MPI libraries.

Runs a real application under different settings of its MPI library, finds faster ones in few
runs, checks they are faster beyond noise, and exports them in the form each library reads.
Heavy modules (optuna, numpy, rich) are imported lazily so that ``import commtune`` and
``commtune --help`` stay fast.
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
