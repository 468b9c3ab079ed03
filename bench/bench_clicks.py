"""How well click-derived labels rank systems, over seeds and logging policies (the click study).

Cranfield's graded qrels are the truth; eleven systems (three BM25 configurations, eight degraded
versions) are ranked by mean DCG@10 with each click model's labels and with the qrels, and Kendall's
tau between the two orderings is printed per model, seed and logging policy
(tests/engine/clicks/click_study.py: a production system and two A/B buckets; ``swap`` is the share
of searches showing two neighbours swapped, ``shuffle`` the share showing the top 10 in a random
order).

    .venv/bin/python bench/bench_clicks.py --seeds 5
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.machine import machine  # noqa: E402
from tests.engine.clicks.click_study import agreement, build_study  # noqa: E402

POLICIES = {"swap 30%": (0.3, 0.0), "swap 10% + shuffle 20%": (0.1, 0.2), "no randomisation": (0.0, 0.0)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    args = parser.parse_args()
    print(f"machine: {machine('numpy', 'scipy')}")
    with tempfile.TemporaryDirectory() as tmp:
        study = build_study(Path(tmp))
        print(f"{len(study.systems)} systems, {len(study.queries)} queries")
        for name, (swap, shuffle) in POLICIES.items():
            taus: dict[str, list[float]] = {}
            for seed in range(args.seeds):
                for model, tau in agreement(study, seed, swap_rate=swap, shuffle_rate=shuffle).items():
                    taus.setdefault(model, []).append(tau)
            cells = ", ".join(f"{m} {statistics.mean(v):.3f} (min {min(v):.3f}, max {max(v):.3f})"
                              for m, v in taus.items())
            print(f"{name}: Kendall tau vs qrels over {args.seeds} seeds: {cells}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
