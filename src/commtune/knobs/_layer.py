"""The layers the user's run selects, read from the library before any run of the program
is spent (issue 95): commtune's ``ct_probe init`` (one small call of each collective) launched
with the user's launch line (hosts, rank count, ``--mca`` options, the environment) in place
of the program, under the variables that make the library say what it selected
(``MPIVendor.layer_env``). The knobs of a layer it does not use are then unavailable, each
with its reason (:func:`with_layer`), so no study searches them and ``--knob`` naming one is
one line.

Read once per launch line and environment (cached beside discovery's): a cluster's selection
does not change between two studies of one program.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import signal
import socket
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from commtune import families, native
from commtune.families import tool_output
from commtune.knobs._catalog import layer_places
from commtune.knobs._discovery import KnobStatus
from commtune.mpi import Installation, Layer, is_launcher, with_program
from commtune.util import write_atomic

PROBE_TIMEOUT = 30.0  # init and one call of each collective: seconds, even at scale


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
    said_text = _run(line, env)
    if said_text is None:
        return None
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


def _run(line: Sequence[str], env: Mapping[str, str]) -> str | None:
    """What the probe printed (both streams: UCX logs on stdout); None where it failed or
    outlived :data:`PROBE_TIMEOUT` (its whole process group killed)."""
    try:
        proc = subprocess.Popen(line, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                stdin=subprocess.DEVNULL, env=env, encoding="utf-8",
                                errors="replace", start_new_session=True)  # fmt: skip
    except OSError:
        return None
    try:
        out, err = proc.communicate(timeout=PROBE_TIMEOUT)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return None
    return err + out if proc.returncode == 0 else None


def with_layer(statuses: Mapping[str, KnobStatus], layer: Layer | None,
               installation: Installation) -> dict[str, KnobStatus]:  # fmt: skip
    """``statuses`` with every knob the run of ``layer`` does not read unavailable, its
    reason the layer's (``MPIVendor.unread``); the knobs of a layer the library names only
    (``MPIVendor.named_only``) in their presets and default space where the run selects
    that layer (``MPIVendor.layer_families``), and the component serving the calls in the
    default space where it is a knob (``MPIVendor.layer_knobs``: Open MPI's han)."""
    out = dict(statuses)
    if layer is None:
        return out
    impl = installation.impl
    for name, status in statuses.items():
        why = impl.unread(layer, name) if status.available else None
        if why is not None:
            out[name] = replace(status, available=False, reason=why)
    for family in impl.layer_families(layer):  # the layer it runs over: its knobs in place
        for name, (presets, default) in layer_places(installation.vendor.value, family).items():
            if name in out:
                knob = replace(out[name].knob, presets=presets, default_space=default)
                out[name] = replace(out[name], knob=knob)
    for name in impl.layer_knobs(layer):  # what serves the calls, raced
        if name in out and out[name].available:
            out[name] = replace(out[name], knob=replace(out[name].knob, default_space=True))
    return out


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
