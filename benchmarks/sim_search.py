"""A simulated study's search against Optuna's TPE and random at the same runs (issue 67).

    python benchmarks/sim_search.py [--runs 50,100,200] [--seeds 10] [--json FILE]

A simulation's runs are deterministic and each costs about the same wall time, so the same
wall time is the same number of runs. Spaces of at most 500 configurations a simulated
study given ``--sim-budget`` measures whole (tests/test_smpi.py checks it on SMPI); this
instrument covers the larger ones: the race's five synthetic spaces (576 to 65,536
configurations, noise 0: the deterministic design), and the recorded SMPI tables (40
configurations each) as a check of the whole-space case. Per space and run budget, over
seeds: how often each design hands back a configuration within 2 % of the space's best
(against its defaults): the best itself, or within 2 % of it (printed best/near/seeds),
and the median share of the best speedup delivered.

- *tuner*: ``tune --max-runs N`` (its default design; a deterministic study: every run but
  the reference's and the verdict's one goes to the search);
- *TPE*, *random*: N single runs, the best measured handed back.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

from commtune.harness import REACHED, SYNTHETIC, replayed, run_strategy, run_tuner

DATA = Path(__file__).resolve().parent / "data"


def share(surface, regret: float) -> float:
    """The share of the best speedup a configuration of this regret delivers."""
    best = surface.default_value / surface.optimum
    got = surface.default_value / (surface.optimum * (1 + regret))
    return (got - 1) / (best - 1) if best > 1.0001 else 1.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", default="50,100,200")
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--tables", action="store_true", help="also the recorded SMPI tables")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    surfaces = {name: make() for name, make in SYNTHETIC.items()}
    if args.tables:
        surfaces |= {p.stem: replayed(p) for p in sorted(DATA.glob("table-smpi-*.json"))}
    rows = []
    for name, surface in surfaces.items():
        for runs in (int(r) for r in args.runs.split(",")):
            found: dict[str, list[tuple[bool, bool, float]]] = {"tuner": [], "tpe": [],
                                                                 "random": []}  # fmt: skip
            for seed in range(args.seeds):
                ours = run_tuner(surface, 0.0, seed, runs)
                regret = ours.confirmed if ours.confirmed is not None else surface.default_regret
                found["tuner"].append((regret < 1e-9, regret <= REACHED, share(surface, regret)))
                for strategy in ("tpe", "random"):
                    plain = run_strategy(strategy, surface, 0.0, seed, runs, design="fixed",
                                     repeats=1)  # fmt: skip
                    best = min(plain.found) if plain.found else surface.default_regret
                    best = min(best, surface.default_regret)  # the defaults kept if better
                    found[strategy].append((best < 1e-9, best <= REACHED, share(surface, best)))
            row = {"space": name, "size": surface.space.size(), "runs": runs,
                   "best": surface.default_value / surface.optimum}  # fmt: skip
            for k, v in found.items():
                shares = [s for _, _, s in v]
                row[k] = {"best": sum(b for b, _, _ in v), "near": sum(f for _, f, _ in v),
                          "seeds": len(v), "share": statistics.median(shares)}  # fmt: skip
            rows.append(row)
            print(f"{name:>28} ({row['size']:>5} configurations, best {row['best']:.3f}x) at "
                  f"{runs:>3} runs: " + ", ".join(
                      f"{k} {row[k]['best']}/{row[k]['near']}/{row[k]['seeds']} "
                      f"({100 * row[k]['share']:.0f} %)"
                      for k in found), flush=True)  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
