"""What click judgments say about systems near and far from the logged one, against the qrels: the
coverage study over seeds and logging policies, this tree beside a baseline commit on the same logs.

SciFact's qrels are the truth; 13 systems (eight BM25 settings, dense ANN, four hybrids) are graded
by a click log simulated with the position-based model (examination 1/p**0.8, attractiveness 0.05
not relevant, 0.6 relevant; 200,000 Zipf searches) under three logging policies: one ranker (the
logged BM25), the same with 30% of searches showing two neighbours swapped (result
randomisation), and four rankers in equal shares (tests/engine/clicks/scifact_study.py). Per policy
and seed: Kendall's tau of the systems ranked by click-derived DCG@10 against the qrels (clicks
alone; with the holes filled by a judge that knows the qrels); the significant verdicts over every
pair (one family of 78) and over the Results page's family (the best against each other), and how
many of them the qrels reverse; the comparisons made on condensed lists and withheld; the largest
relative error of the position-bias estimate at positions 1-10. The baseline's click grades (its
engine/clicks/models.py, run from a git checkout on the same counts) are compared plainly, as the
app did before the rule for judgments with holes.

    .venv/bin/python bench/bench_click_coverage.py --seeds 5 --baseline ffbbbc7
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.baseline import ISOLATE, Tree, checkout  # noqa: E402
from bench.machine import load, machine  # noqa: E402
from searchgrade.engine.clicks.simulation import simulate_clicks  # noqa: E402
from searchgrade.engine.statistics.paired import paired_differences  # noqa: E402
from tests.engine.clicks import scifact_study as study_module  # noqa: E402

POLICIES = {"one ranker": ((study_module.LOGGED,), 0.0),
            "one ranker, 30% swapped": ((study_module.LOGGED,), 0.3),
            "four rankers": (study_module.POLICIES, 0.0)}

OLD_GRADES = """
import numpy as np
from {prefix}engine.clicks.models import ClickCounts, click_grades
d = np.load({path!r})
counts = ClickCounts.of(d["pair"], d["position"], d["impressions"], d["clicks"], int(d["n"]))
_, grades, judged = click_grades(counts, "pbm", min_impressions=10)
np.savez({out!r}, grades=grades, judged=judged)
"""


def old_labels(tree: Tree, sim: object, folder: Path) -> dict[str, dict[str, int]]:
    """The baseline's pbm grades of the same click counts (its own code, in a child process)."""
    counts = sim.counts  # type: ignore[attr-defined]
    path, out = folder / "counts.npz", folder / "grades.npz"
    np.savez(path, pair=counts.pair, position=counts.position, impressions=counts.impressions, clicks=counts.clicks,
             n=counts.n_pairs)
    code = f"{ISOLATE}; " + "; ".join(OLD_GRADES.format(prefix=tree.prefix, path=str(path), out=str(out))
                                      .strip().splitlines())
    subprocess.run([sys.executable, "-c", code], env=tree.env(), check=True)
    found = np.load(out)
    labels: dict[str, dict[str, int]] = {}
    for (query, doc), grade, judged in zip(sim.pairs, found["grades"], found["judged"], strict=True):  # type: ignore[attr-defined]
        if judged:
            labels.setdefault(query, {})[doc] = int(grade)
    return labels


def plain_reversals(study: study_module.Study, labels: dict[str, dict[str, int]],
                    pairs: list[tuple[str, str]]) -> tuple[int, int]:
    """(significant, reversed by the qrels) of plain paired comparisons: the app before the rule."""
    values = {n: study_module.per_query(study, n, labels)[0] for n in study.systems}
    truth = {n: study_module.per_query(study, n, study.truth)[0].mean() for n in study.systems}
    tests = paired_differences([(values[a], values[b]) for a, b in pairs])
    significant = [(a, b, d) for (a, b), d in zip(pairs, tests, strict=True) if d.significant]
    return len(significant), sum(np.sign(truth[a] - truth[b]) != np.sign(d.diff) for a, b, d in significant)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--baseline", default="ffbbbc7", help="the commit whose click grades are the 'before'")
    args = parser.parse_args()
    print(f"machine: {machine('numpy', 'scipy')}")
    import itertools

    with tempfile.TemporaryDirectory() as tmp, checkout(args.baseline) as old:
        folder = Path(tmp)
        study = study_module.build_systems(folder)
        names = sorted(study.systems)
        every = list(itertools.combinations(names, 2))
        print(f"{len(study.systems)} systems, {len(study.queries)} queries, {study_module.SESSIONS:,} searches; "
              f"load {load()}")
        for policy, (served, swap) in POLICIES.items():
            rows: dict[str, list[float]] = {}
            for seed in range(args.seeds):
                sim = simulate_clicks({n: study.systems[n] for n in served}, dict.fromkeys(served, 1.0),
                                      study_module.searches_per_query(study, seed), study.truth, max_grade=1,
                                      eta=study_module.ETA, swap_rate=swap, ceiling=study_module.CEILING, seed=seed)
                from searchgrade.engine.clicks.grading import click_grades

                grades = click_grades(sim.counts, "pbm")
                labels = study_module.click_labels(sim.pairs, grades)
                all_pairs = study_module.verdicts(study, labels, every)
                page = study_module.verdicts(study, labels, study_module.best_against_others(study, labels))
                before = old_labels(old, sim, folder)
                old_all = plain_reversals(study, before, every)
                old_page = plain_reversals(study, before, study_module.best_against_others(study, before))
                found = {
                    "tau": study_module.kendall(study, labels),
                    "tau filled": study_module.kendall(study, study_module.filled(labels, study)),
                    "significant": all_pairs.count("significant"), "reversed": len(all_pairs.reversed),
                    "page significant": page.count("significant"), "page reversed": len(page.reversed),
                    "condensed": all_pairs.count("condensed"), "withheld": all_pairs.count("withheld"),
                    "theta error": float(np.abs(study_module.theta_error(grades)).max()),
                    "before tau": study_module.kendall(study, before), "before significant": old_all[0],
                    "before reversed": old_all[1], "before page reversed": old_page[1],
                }
                for key, value in found.items():
                    rows.setdefault(key, []).append(float(value))
                print(f"  {policy}, seed {seed}: bias from {grades.position_bias.source}, cut-points from "
                      f"{grades.thresholds.source}; load {load()}")
            print(f"{policy} ({args.seeds} seeds, mean [min, max]):")
            for key, values in rows.items():
                print(f"  {key:<22} {statistics.mean(values):7.3f} [{min(values):.3f}, {max(values):.3f}]")
    print(f"machine: {machine('numpy', 'scipy')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
