"""The layers the user's run selects, read from the library before any run of the program
is spent (issue 95): commtune's ``ct_probe init`` (one small call of each collective) launched
with the user's launch line (hosts, rank count, ``--mca`` options, the environment) in place
of the program, under the variables that make the library say what it selected
(``MPIVendor.layer_env``), as every run is launched (``trial.run_process``: its whole tree
killed at :data:`PROBE_TIMEOUT`). ``knobs.with_layer`` then leaves out the knobs the run does
not read.

Read once per launch line and environment (cached beside discovery's): a cluster's selection
does not change between two studies of one program.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import socket
from collections.abc import Mapping, Sequence
from pathlib import Path

from commtune import families, native
from commtune.families import tool_output
from commtune.mpi import Installation, Layer, is_launcher, with_program
from commtune.trial import run_process
from commtune.util import write_atomic

PROBE_TIMEOUT = 30.0  # init and one call of each collective: seconds, even at scale
SAID_MOST = 8 << 20  # of the probe's stderr: every rank's selection, verbose


def read_layer(installation: Installation, command: Sequence[str],
               through: Sequence[str] = ()) -> Layer | None:  # fmt: skip
    """The layer a run of ``command`` selects, as the library says it; None where the
    library cannot say, the line is not a launcher's (a wrapper script: what it runs is its
    own), has no program to stand in for, or the probe failed. ``through``: the words every
    run of the study starts with (``--through``: a test bed node's namespaces)."""
    said = installation.impl.layer_env(installation.device)
    # a wrapper script's line: its program is not the launcher's (a singleton would answer)
    if not said or not (is_launcher(command[0]) or os.path.basename(command[0]) == "srun"):
        return None
    probe = str(native.build(installation, "tools/ct_probe.c"))
    line = with_program(command, [probe, "init"])
    if line is None:
        return None
    line = [*through, *line]
    env = {**installation.tool_env(), **said}
    path = _cache(installation, line, env)
    if path.exists():
        return installation.impl.parse_layer(path.read_text())
    try:
        done = run_process(line, env, PROBE_TIMEOUT, stderr_tail=SAID_MOST)
    except OSError:  # the line's launcher cannot start
        return None
    if done.returncode != 0:
        return None
    said_text = done.stderr_tail + done.stdout  # UCX logs on stdout
    layer = installation.impl.parse_layer(said_text)
    if layer is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, said_text)  # two studies may probe at once
    return layer


def layer_warnings(installation: Installation, layer: Layer) -> list[str]:
    """What the user must know of the layer: a UCX the library loads that is not the one
    whose ``ucx_info`` listed its variables (pip's Open MPI 5 carries UCX 1.20, PATH's
    ``ucx_info`` may be 1.13): the variables and their domains are the listed UCX's."""
    loaded = next((n for n in layer.notes if n.startswith("UCX ")), None)
    tools = [t for f in families.of(installation.impl) if f.name == "ucx"
             for t in f.tools(installation)]  # fmt: skip
    if loaded is None or not tools:
        return []
    listed = tool_output(installation, (tools[0],), ["-v"])
    version = re.search(r"Version (\S+)", listed)
    if version is None or loaded.split()[1] == version.group(1):
        return []
    return [
        f"the run loads {loaded}; its UCX variables were listed by {tools[0]} of UCX "
        f"{version.group(1)}: a variable or value one has and the other lacks is refused "
        "or ignored at run time"
    ]


def _cache(installation: Installation, line: Sequence[str], env: Mapping[str, str]) -> Path:
    """Where the selection a launch line and environment make is kept: keyed by the host,
    the line and the library's and its layers' variables in the environment."""
    prefixes = (*families.recorded_prefixes(), "SLURM_JOB")
    keyed = sorted((k, v) for k, v in env.items() if k.startswith(prefixes))
    launcher = installation.launcher
    stamp = os.stat(launcher).st_mtime if os.path.exists(launcher) else 0
    key = json.dumps([socket.gethostname(), list(line), keyed, stamp])
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    return native.cache_dir() / "layers" / f"{digest}.txt"
