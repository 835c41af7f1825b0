"""``commtune policy check|eval|run``: the policy engine's rule files."""

from __future__ import annotations

import argparse
import json

from commtune.cli._common import (
    Command,
    add_mpi,
    need_command,
    positive,
    print_json,
)
from commtune.errors import UsageError
from commtune.libcommtune import Setting
from commtune.mpi import installation_of


def _add_policy(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="action", required=True, parser_class=type(p))
    check = sub.add_parser("check", help="check rule files against the installed MPI")
    check.add_argument("files", nargs="+", metavar="FILE")
    add_mpi(check)
    check.add_argument("--json", action="store_true")
    sub.add_parser("schema", help="print the JSON schema of rule files (for editors)")
    evaluate = sub.add_parser("eval", help="evaluate the final rules on a saved profile")
    evaluate.add_argument("profile", metavar="PROFILE.json")
    evaluate.add_argument("--rules", action="append", default=[], metavar="FILE")
    evaluate.add_argument("--no-builtin", action="store_true", help="only the --rules files")
    evaluate.add_argument("--json", action="store_true")
    run = sub.add_parser("run", help="run once with the rules: commtune policy run -- mpirun ...")
    run.add_argument("--rules", action="append", default=[], metavar="FILE")
    run.add_argument("--no-builtin", action="store_true", help="only the --rules files")
    add_mpi(run)
    run.add_argument(
        "--interval",
        type=positive(float),
        default=0.05,
        help="seconds between evaluations of the periodic rules (default 0.05)",
    )
    run.add_argument("--timeout", type=positive(float), default=3600.0)
    run.add_argument("-o", "--output", help="also write the profile JSON to this file")
    run.add_argument("--json", action="store_true")


def cmd_policy(args: argparse.Namespace, command: list[str] | None) -> int:
    if command is not None and args.action != "run":
        raise UsageError(f"commtune policy {args.action} takes no command after '--'")
    return {"check": _check, "eval": _eval, "run": _run, "schema": _schema}[args.action](
        args, command
    )


def _schema(args: argparse.Namespace, command: list[str] | None) -> int:
    from commtune.policy import SCHEMA

    print(SCHEMA.read_text(), end="")
    return 0


def _check(args: argparse.Namespace, command: list[str] | None) -> int:
    from commtune.policy import check_periodic, check_rules, load_rules
    from commtune.report import UI

    inst = installation_of(args.mpi)
    rules = load_rules(args.files)
    check_periodic(rules, args.files)
    check_rules(rules, inst)
    ui = UI(json_mode=args.json)
    periodic = sum(r.when == "periodic" for r in rules.rules)
    ui.info(
        f"{len(rules)} rule(s) in {len(args.files)} file(s), {periodic} periodic: "
        f"valid for {inst.describe()}"
    )
    if args.json:
        print_json({"rules": [r.name for r in rules.rules], "periodic": periodic, "ok": True})
    return 0


def _rules(files: list[str], library: str, builtin: bool):  # type: ignore[no-untyped-def]
    from commtune.policy import RuleSet, builtin_path, load_rules

    paths = ([str(builtin_path(library))] if builtin else []) + list(files)
    return load_rules(paths) if paths else RuleSet()


def _show(ui, actions, command: list[str], as_json: bool, title: str) -> None:  # type: ignore[no-untyped-def]
    from commtune.report import action_json, show_actions

    if actions:
        show_actions(ui, actions, command, title)
    else:
        ui.info("no rule fired")
    if as_json:
        print_json({"actions": [action_json(a, command) for a in actions]})


def _eval(args: argparse.Namespace, command: list[str] | None) -> int:
    from commtune.policy import evaluate
    from commtune.profile import Profile
    from commtune.report import UI

    profile = Profile.load(args.profile)
    library = str(profile.data.get("vendor", ""))
    rules = _rules(args.rules, library, not args.no_builtin)
    ui = UI(json_mode=args.json)
    _show(ui, evaluate(rules, profile), ["..."], args.json, f"rules on {args.profile}")
    return 0


def _run(args: argparse.Namespace, command: list[str] | None) -> int:
    import tempfile

    from commtune.launch import launcher_for
    from commtune.mpi import resolve_command
    from commtune.policy import check_periodic, check_rules, evaluate, load_rules
    from commtune.report import UI, runtime_table
    from commtune.service import profiling
    from commtune.trial import LocalExecutor, Objective
    from commtune.util import write_atomic

    command = need_command(command, "to run")
    inst = resolve_command(command, args.mpi)
    rules = _rules(args.rules, inst.vendor.value, not args.no_builtin)
    check_rules(rules, inst)
    periodic = load_rules(args.rules) if args.rules else None
    if periodic is not None:
        check_periodic(periodic, args.rules)
    ui = UI(json_mode=args.json)
    with tempfile.TemporaryDirectory(prefix="commtune-policy-") as tmp:
        variables = {Setting.PVAR_INTERVAL.env: str(args.interval)}
        if periodic is not None and any(r.when == "periodic" for r in periodic.rules):
            files = [_for_the_interposer(inst, path, tmp, i) for i, path in enumerate(args.rules)]
            variables[Setting.POLICY.env] = ":".join(files)
        executor = LocalExecutor(
            launcher_for(inst),
            command,
            [],
            Objective.parse("wall"),
            profiling=profiling(inst, args.interval),
            variables=variables,
        )
        n_periodic = sum(r.when == "periodic" for r in rules.rules)
        ui.info(f"{inst.describe()}; {len(rules)} rule(s), {n_periodic} periodic")
        run = executor.run(None, args.timeout)
    if run.failure is not None or run.profile is None:
        raise UsageError(f"the command failed ({run.failure or 'no profile written'})")
    profile = run.profile
    if args.output:
        write_atomic(args.output, json.dumps(profile.data, indent=1) + "\n")
    runtime = profile.data.get("policy") or {}
    if runtime.get("actions"):
        ui.print(runtime_table(runtime["actions"]))
    elif n_periodic:
        ui.info(f"periodic rules: no action at {runtime.get('safe_points', 0)} safe point(s)")
    actions = evaluate(rules, profile)
    _show(ui, actions, command, False, "policy: final rules")
    if args.json:
        from commtune.report import action_json

        print_json(
            {
                "actions": [action_json(a, command) for a in actions],
                "runtime": runtime,
                "wall_time": profile.data["wall_time"]["max"],
            }
        )
    return 0


def _for_the_interposer(inst, path: str, folder: str, index: int) -> str:  # type: ignore[no-untyped-def]
    """A copy of the rule file whose CVAR values are what MPI_T takes: an algorithm's name
    becomes its number where the library lists algorithms by position (MPICH)."""
    from pathlib import Path

    from commtune.knobs import enumerators, load_catalog

    names = enumerators(inst)
    by_env = {k.env: k for k in load_catalog(inst.vendor.value).values()}

    def walk(node):  # type: ignore[no-untyped-def]
        if isinstance(node, list):
            return [walk(n) for n in node]
        if not isinstance(node, dict):
            return node
        out = {k: walk(v) for k, v in node.items()}
        cvar = out.get("leftoperand")
        if out.get("operator", "=") == "=" and "rightoperand" in out and isinstance(cvar, str):
            knob = by_env.get(cvar.removeprefix("cvar:"))
            if knob is not None and isinstance(out["rightoperand"], str):
                listed = tuple(names.get(knob.name, ()))
                out["rightoperand"] = inst.impl.mpit_value(out["rightoperand"], listed, True)
        return out

    target = Path(folder) / f"{index}-{Path(path).name}"
    target.write_text(json.dumps(walk(json.loads(Path(path).read_text()))))
    return str(target)


COMMANDS = [
    Command(
        "policy",
        "rule files: check them, evaluate them on a profile, run with them",
        _add_policy,
        cmd_policy,
        takes_command=True,
    ),
]
