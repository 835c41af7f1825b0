"""What earlier studies know: per platform and library, the programs tuned there, their
profiles and the configurations that won (``commtune knowledge``), and, for a new study,
the configurations of the most similar programs on the same platform and library to try
first (transfer; the seed systems' knowledge: AITuning's pre-trained network, Behzad et
al.'s model, Wang et al.'s one profiled run).

Nothing is stored twice: a study already keeps its platform's fingerprint, its installation,
its reference run's profile (libcommtune's) and its verdict; this package reads them.
"""

from commtune.knowledge._base import Known, distance, known, similar

__all__ = ["Known", "distance", "known", "similar"]
