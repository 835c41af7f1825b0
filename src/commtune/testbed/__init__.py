"""A cluster on one machine: nodes as network namespaces, each with its own hostname, joined
by one bridge per rail inside a switch namespace of their own (``testbed/_bed.py``).

``Cluster(nodes=4, rails=2).up()`` brings it up (root); ``bed.agent`` is a remote-shell
agent for launchers (Open MPI's ``plm_rsh_agent``, hydra's ``-launcher-exec``): it runs the
line it is given inside the named node; ``bed.run(node, argv)`` runs a command there.
``down()`` removes everything; a bring-up first removes what a bed whose owner died left.
``up(keep=True)`` leaves it up after this process (``commtune bed``): ``Cluster.load(name)``
gets it back elsewhere, ``execute(argv, env)`` runs a command in its first node.
``SlurmBed(bed).running()``: a Slurm cluster over the bed's nodes (a slurmd in each).
"""

from commtune.testbed._bed import (
    BED_PREFIX,
    Cluster,
    Node,
    available,
    beds,
    cleanup_stale,
    reap,
    rerun_inside,
    running,
    teardown,
)
from commtune.testbed._slurm import SlurmBed, slurm_available, slurm_conf

__all__ = ["BED_PREFIX", "Cluster", "Node", "SlurmBed", "available", "beds", "cleanup_stale",
           "reap", "rerun_inside", "running", "slurm_available", "slurm_conf",
           "teardown"]  # fmt: skip
