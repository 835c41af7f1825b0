"""NewMadeleine's multi-rail split inside a real MPI library, on the test bed (root).

    python benchmarks/multirail.py [--rates 400,200] [--size 16777216] [--rounds 5]
                                   [--mpi openmpi,openmpi@5] [--out FILE]

Two nodes joined by two rails of unequal rate (``tc tbf`` on each node's side). Per
installation:

1. *Sampling*: each rail alone (the library given only its interface), a ping-pong over
   sizes between the two nodes; the planner splits a ``--size`` message so that both rails
   end together (``commtune.rails.planned_shares``), and the split becomes the library's
   weights (``MPIVendor.rail_weights``: Open MPI's ``btl_tcp_bandwidth_<interface>``).
2. *Side by side*, ``--rounds`` rounds, each launching in turn: the sampled split, the even
   split (equal weights), the best single rail; and, for reference, the library as it
   comes (both interfaces, its own weights). Per launch: the one-way time of a ``--size``
   ping-pong (median over the sampler's blocks) and the bytes the first node sent on each
   interface (its kernel's counters), so the split the library made is counted, not assumed.

Reported per split: bandwidth (median over rounds, bootstrap 95 % CI), its share of the sum
of the rails' rates, and the measured byte shares beside the planned ones.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from commtune import native
from commtune.mpi import installation_of
from commtune.rails import even_shares, pingpong, planned_shares, rail_curves
from commtune.testbed import Cluster

SAMPLE_SIZES = (256 << 10, 1 << 20, 4 << 20, 16 << 20)


def median_ci(values: list[float], seed: int = 0) -> tuple[float, float, float]:
    rng = np.random.default_rng(seed)
    boot = np.median(rng.choice(values, size=(4000, len(values))), axis=1)
    low, high = np.quantile(boot, [0.025, 0.975])
    return statistics.median(values), float(low), float(high)


def run_one(bed: Cluster, mpi: str, rates: list[float], size: int, rounds: int) -> dict:
    inst = installation_of(mpi)
    program = native.build(inst, "bench/ct_sample.c")
    t0 = time.perf_counter()
    curves = rail_curves(bed, inst, program, SAMPLE_SIZES)
    sampling_s = time.perf_counter() - t0
    plan = planned_shares(curves, size)
    best = min(curves, key=lambda dev: curves[dev].predict(size))
    splits: dict[str, tuple[dict[str, float] | None, dict[str, str]]] = {}
    for name, shares in (("sampled split", plan), ("even split", even_shares(bed.devices))):
        weights = inst.impl.rail_weights(shares)
        if weights is None:
            raise SystemExit(f"{mpi}: the library takes no per-interface weights")
        splits[name] = (shares, weights)
    splits[f"best single rail ({best})"] = ({best: 1.0}, inst.impl.network_env([best]))
    splits["library as it comes"] = (None, {})
    measured: dict[str, list] = {name: [] for name in splits}
    for r in range(rounds):
        for name, (_, env) in splits.items():
            transfer = pingpong(bed, inst, program, [size], env)[0]
            measured[name].append(transfer)
            print(f"  {mpi} round {r + 1}/{rounds} {name}: "
                  f"{transfer.bandwidth * 8e-6:.0f} Mbit/s", file=sys.stderr)  # fmt: skip
    aggregate = sum(rates) * 1e6 / 8
    rows = []
    for name, (shares, env) in splits.items():
        bws = [t.bandwidth for t in measured[name]]
        med, low, high = median_ci(bws)
        byte_shares = {dev: statistics.median(t.shares()[dev] for t in measured[name])
                       for dev in bed.devices}  # fmt: skip
        rows.append({
            "split": name,
            "planned_shares": shares,
            "measured_byte_shares": byte_shares,
            "weights": env if shares is not None else {},
            "bandwidth_mbit": [b * 8e-6 for b in bws],
            "median_mbit": med * 8e-6,
            "ci_mbit": [low * 8e-6, high * 8e-6],
            "share_of_sum": med / aggregate,
            "share_of_sum_ci": [low / aggregate, high / aggregate],
            "spread": (max(bws) - min(bws)) / med,
        })  # fmt: skip
    return {
        "mpi": mpi,
        "library": f"{inst.vendor.value} {inst.version}",
        "curves_ns": {dev: c.to_json() for dev, c in curves.items()},
        "sampling_s": sampling_s,
        "rows": rows,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rates", default="400,200", help="Mbit/s per rail")
    parser.add_argument("--size", type=int, default=16 << 20)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--mpi", default="openmpi,openmpi@5")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/out/multirail.json"))
    args = parser.parse_args()
    rates = [float(r) for r in args.rates.split(",")]
    results = []
    with Cluster(2, len(rates), rates=rates) as bed:
        for mpi in args.mpi.split(","):
            results.append(run_one(bed, mpi, rates, args.size, args.rounds))
    report = {"rates_mbit": rates, "size": args.size, "rounds": args.rounds,
              "results": results}  # fmt: skip
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1))
    print(f"rails {args.rates} Mbit/s (sum {sum(rates):g}), {args.size} B ping-pong, "
          f"{args.rounds} interleaved rounds")  # fmt: skip
    for res in results:
        print(f"{res['library']} (rails sampled in {res['sampling_s']:.0f} s)")
        for row in res["rows"]:
            planned = row["planned_shares"]
            plan_text = ("" if planned is None else
                         " planned " + "/".join(f"{v:.2f}" for v in planned.values()))  # fmt: skip
            bytes_text = "/".join(f"{v:.2f}" for v in row["measured_byte_shares"].values())
            print(f"  {row['split']:<28} {row['median_mbit']:6.0f} Mbit/s "
                  f"[{row['ci_mbit'][0]:.0f}, {row['ci_mbit'][1]:.0f}] "
                  f"{100 * row['share_of_sum']:5.1f} % of the sum, spread "
                  f"{100 * row['spread']:.0f} %, bytes {bytes_text}{plan_text}")  # fmt: skip


if __name__ == "__main__":
    main()
