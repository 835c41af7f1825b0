"""``commtune lib`` and ``commtune profile``: libcommtune for batch scripts, and one profiled
run of the user's command."""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from commtune.cli._common import (
    Command,
    add_mpi,
    add_storage,
    default_storage,
    need_command,
    positive,
    print_json,
)
from commtune.errors import UsageError
from commtune.knobs import enumerators as knob_enumerators
from commtune.libcommtune import PVAR_INTERVAL
from commtune.mpi import installation_of

if TYPE_CHECKING:
    from commtune.knobs import Knob, Value
    from commtune.mpi import Installation
    from commtune.profile import Profile
    from commtune.report import UI


def _add_lib(p: argparse.ArgumentParser) -> None:
    add_mpi(p)
    p.add_argument("--header", action="store_true", help="print the path of commtune.h instead")


def _add_io_kernel(p: argparse.ArgumentParser) -> None:
    add_mpi(p)


def cmd_io_kernel(args: argparse.Namespace, command: list[str] | None) -> int:
    """The bundled I/O kernel's path (ct_io: -n PARTICLES -m mpiio|hdf5 -d DIR), built with
    the MPI's mpicc, against its parallel HDF5 where there is one."""
    from commtune import native

    program, has_hdf5 = native.build_io(installation_of(args.mpi))
    print(program)
    if not has_hdf5:
        print("commtune: no parallel HDF5 for this MPI: the kernel has -m mpiio only",
              file=sys.stderr)  # fmt: skip
    return 0


def _add_profile(p: argparse.ArgumentParser) -> None:
    add_mpi(p)
    p.add_argument(
        "--knob",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="apply this knob value and check that it took; repeatable",
    )
    p.add_argument(
        "--pvar-interval",
        type=positive(float),
        default=PVAR_INTERVAL,
        help=f"seconds between samples of performance variables (default {PVAR_INTERVAL:g})",
    )
    p.add_argument("--timeout", type=positive(float), default=3600.0, help="seconds (default 3600)")
    p.add_argument("-o", "--output", help="also write the profile JSON to this file")
    p.add_argument("--json", action="store_true", help="print the profile JSON")
    add_storage(p)  # what earlier studies there found for similar programs


def cmd_lib(args: argparse.Namespace, command: list[str] | None) -> int:
    from commtune import native

    if args.header:
        print(native.interposer_dir() / "commtune.h")
        return 0
    print(native.build_interposer(installation_of(args.mpi)))
    return 0


def _profile_config(inst: Installation, specs: list[str]) -> tuple[list[Knob], dict[str, Value]]:
    """``--knob NAME=VALUE`` of ``commtune profile``: one value each, validated."""
    from commtune.knobs import build_space, installed_knobs

    if not specs:
        return [], {}
    for spec in specs:
        if "=" not in spec:
            raise UsageError(f"--knob {spec}: commtune profile needs NAME=VALUE")
    space = build_space(installed_knobs(inst), inst.vendor.value, specs, [])
    config = {}
    for dim in space.dimensions:
        values = dim.candidates()
        if len(values) != 1:
            raise UsageError(f"--knob {dim.knob.name}: commtune profile takes one value")
        config[dim.knob.name] = values[0]
    return [d.knob for d in space.dimensions], config


def cmd_profile(args: argparse.Namespace, command: list[str] | None) -> int:
    from commtune.launch import launcher_for
    from commtune.mpi import Profiled, resolve_command
    from commtune.report import (
        UI,
        cvars_table,
        features_table,
        operations_table,
        summary_table,
        variables_table,
    )
    from commtune.service import profiling
    from commtune.trial import Executor, LocalExecutor, Objective, stderr_summary
    from commtune.util import write_atomic

    command = need_command(command, "to profile")
    inst = resolve_command(command, args.mpi)
    knobs, config = _profile_config(inst, args.knob)
    ui = UI(json_mode=args.json)
    executor: Executor
    if inst.impl.profiled_by is Profiled.TRACE:
        # no preloaded library reaches the program: the launcher's own trace of the run
        from commtune.mpi import launch_files
        from commtune.trial import profiled

        simulated = launch_files(command)
        executor = profiled(LocalExecutor(launcher_for(inst), command, knobs,
                                          Objective.parse(inst.impl.run_value),
                                          enumerators=knob_enumerators(inst)))  # fmt: skip
        ui.info(f"{inst.describe()}; {simulated.describe()}; profiling from "
                f"{inst.impl.profile_source}")  # fmt: skip
    else:
        lib = profiling(inst, args.pvar_interval)
        executor = LocalExecutor(
            launcher_for(inst),
            command,
            knobs,
            Objective.parse("wall"),
            profiling=lib,
            enumerators=knob_enumerators(inst),
        )
        ui.info(f"{inst.describe()}; profiling with {lib.library}")
    run = executor.run(config or None, args.timeout)
    if run.failure is not None:
        said = stderr_summary(run.stderr_tail)
        raise UsageError(f"the command failed ({run.failure}) {said}".rstrip())
    if run.profile is None:
        raise UsageError(
            "no profile written: did every rank call MPI_Finalize, and is the program "
            "dynamically linked against this MPI?"
        )
    profile = run.profile
    if args.output:
        write_atomic(args.output, json.dumps(profile.data, indent=1) + "\n")
    ui.print(summary_table(profile))
    ui.print(operations_table(profile))
    ui.print(features_table(profile))
    if profile.pvars:
        ui.print(variables_table("performance variables (MPI_T)", profile.pvars))
    if profile.user:
        ui.print(variables_table("user-defined variables", profile.user))
    if profile.cvars:
        ui.print(cvars_table(profile))
    for knob, reason in run.not_applied.items():
        ui.warn(f"{knob} not applied: {reason}")
    # what won for similar programs on this platform first, then the built-in rules
    learned = _known_answers(args.storage, inst, profile, ui, command)
    from commtune.policy import builtin_rules, evaluate
    from commtune.report import action_json, show_actions

    actions = evaluate(builtin_rules(inst.vendor.value), profile)
    if actions:
        show_actions(ui, actions, command, "built-in recommendations")
    if args.json:
        recommendations = [action_json(a, command) for a in actions if a.kind == "recommend"]
        print_json({**profile.data, "known": learned, "recommendations": recommendations})
    return 0


def _known_answers(
    url: str, inst: Installation, profile: Profile, ui: UI, command: Sequence[str]
) -> list[dict[str, Any]]:
    """The accepted configurations of the storage's studies on this platform and library,
    the most similar program first, with the speedup and CI each was accepted at (nothing
    is created: a storage that is not there knows nothing)."""
    from commtune.knowledge import known, similar
    from commtune.platform import Fingerprint
    from commtune.predict import features_of
    from commtune.report import knowledge_table
    from commtune.store import Store, backend, normalize_url

    url = normalize_url(url)
    if not backend(url).exists():
        return []
    platform = Fingerprint.of(inst).key
    entries = [k for k in known(Store(url, create=False)) if k.accepted]
    ranked = similar(entries, features_of(profile), platform, inst.vendor.value)
    if not ranked:
        return []
    title = "what won for similar programs here (most similar first)"
    ui.print(knowledge_table([k for k, _ in ranked], title))
    storage = "" if url == normalize_url(default_storage()) else f" --storage {shlex.quote(url)}"
    for entry, _ in ranked[:1]:
        ui.command(f"  commtune run --study {shlex.quote(entry.study)}{storage} -- "
                   f"{shlex.join(command)}   (runs with what won for {entry.program})")  # fmt: skip
    return [{**k.to_json(), "distance": round(far, 4)} for k, far in ranked]


COMMANDS = [
    Command(
        "lib",
        "print the path of libcommtune (built if needed) for LD_PRELOAD",
        _add_lib,
        cmd_lib,
    ),
    Command(
        "io-kernel",
        "print the path of the bundled I/O kernel (VPIC-IO layout; built if needed)",
        _add_io_kernel,
        cmd_io_kernel,
    ),
    Command(
        "profile",
        "run once with libcommtune: commtune profile -- mpirun ...",
        _add_profile,
        cmd_profile,
        takes_command=True,
    ),
]
