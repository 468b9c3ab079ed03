"""Simulated judges that know the qrels, and a collection whose strategies differ by known amounts.

The same behaviours grade pairs written straight into a store (fast report tests) and answer over
HTTP as an OpenAI-compatible server (tests/engine/judges/judge_server.py), so what the report
recovers can be checked against what was built in:

- ``faithful``: people's grade;
- ``flip``: people's grade on most pairs, the other side of relevant / not relevant (3 <-> 0) on a
  fixed share of the pairs (the same pairs every time it is asked);
- ``lenient``: one grade higher on non-relevant pairs (grade 0 or 1);
- ``random``: people's grade, except on a share of the calls, where it draws 0-3 at random (a new
  draw on every call: it does not say the same thing twice).
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tests.conftest import write_beir

#: behaviour(people's grade, pair key, rng of this call) -> the judge's grade.
Behaviour = Callable[[int, str, random.Random], int]


def _share(key: str) -> float:
    """A fixed number in [0, 1) per pair key."""
    return int(hashlib.sha256(key.encode()).hexdigest()[:8], 16) / 2**32


def faithful(grade: int, key: str, rng: random.Random) -> int:
    return grade


def flip(share: float) -> Behaviour:
    def judge(grade: int, key: str, rng: random.Random) -> int:
        if _share("flip" + key) < share:
            return 0 if grade >= 2 else 3
        return grade
    return judge


def lenient(grade: int, key: str, rng: random.Random) -> int:
    return grade + 1 if grade < 2 else grade


def at_random(share: float) -> Behaviour:
    def judge(grade: int, key: str, rng: random.Random) -> int:
        return rng.randint(0, 3) if rng.random() < share else grade
    return judge


FLIP_SHARE = 0.3
RANDOM_SHARE = 0.5
#: The judges the tests use, by model name.
BEHAVIOURS: dict[str, Behaviour] = {
    "faithful": faithful, "faithful_big": faithful, "flip": flip(FLIP_SHARE), "lenient": lenient,
    "random": at_random(RANDOM_SHARE),
}


@dataclass
class Simulated:
    """A collection (BEIR folder) with 0-3 qrels, and strategies of known skill."""

    folder: Path
    docs: dict[str, tuple[str, str]]
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]
    #: strategy -> query -> ranked doc ids
    rankings: dict[str, dict[str, list[str]]]

    def grade(self, query_id: str, doc_id: str) -> int:
        return self.qrels.get(query_id, {}).get(doc_id, 0)


#: Strategies and their skill: the chance that each place holds a relevant document.
SKILLS = {"best": 0.85, "good": 0.6, "fair": 0.35, "poor": 0.1}


def ranking(qrels: dict[str, int], others: list[str], skill: float, k: int, rng: random.Random) -> list[str]:
    """k documents: at each place, with chance ``skill`` the next relevant one (best first)."""
    relevant = sorted((d for d, g in qrels.items() if g >= 2), key=lambda d: (-qrels[d], d))
    rest = [d for d in others if d not in relevant]
    rng.shuffle(rest)
    out: list[str] = []
    while len(out) < k:
        if relevant and rng.random() < skill:
            out.append(relevant.pop(0))
        elif rest:
            out.append(rest.pop())
        else:
            out.append(relevant.pop(0))
    return out


def simulated(folder: Path, n_queries: int = 40, k: int = 5, seed: int = 0,
              skills: dict[str, float] | None = None) -> Simulated:
    """n_queries queries over their own 12 documents each: 4 relevant (grades 3, 3, 2, 2), 3 on the
    topic (1), the rest unjudged; rankings of the top k by ``skills`` (default SKILLS)."""
    skills = skills or SKILLS
    rng = random.Random(seed)
    docs: dict[str, tuple[str, str]] = {}
    queries: dict[str, str] = {}
    qrels: dict[str, dict[str, int]] = {}
    by_query: dict[str, list[str]] = {}
    for i in range(n_queries):
        qid = f"q{i}"
        queries[qid] = f"question number {i} about topic {i}"
        ids = [f"q{i}d{j}" for j in range(12)]
        by_query[qid] = ids
        for j, d in enumerate(ids):
            docs[d] = (f"Title {i}.{j}", f"Document {j} of topic {i}, with words about subject {i * 12 + j}.")
        qrels[qid] = {ids[0]: 3, ids[1]: 3, ids[2]: 2, ids[3]: 2, ids[4]: 1, ids[5]: 1, ids[6]: 1}
    rankings = {s: {q: ranking(qrels[q], by_query[q], skill, k, rng) for q in queries} for s, skill in skills.items()}
    write_beir(folder, docs=docs, queries=queries,
               qrels=[(q, d, g) for q, judged in qrels.items() for d, g in judged.items()])
    with open(folder / "rankings.json", "w", encoding="utf-8") as f:
        json.dump(rankings, f)
    return Simulated(folder, docs, queries, qrels, rankings)


class SimulatedSearch:
    """A strategy of the strategies file (kind "python") returning the simulated rankings."""

    def __init__(self, folder: str, strategy: str) -> None:
        folder_path = Path(folder)
        self.ranking = json.loads((folder_path / "rankings.json").read_text())[strategy]
        self.ids = {json.loads(line)["text"]: json.loads(line)["_id"]
                    for line in (folder_path / "queries.jsonl").read_text().splitlines()}

    def search(self, queries: list[str], k: int) -> list[list[tuple[str, float]]]:
        return [[(d, 1.0 / rank) for rank, d in enumerate(self.ranking[self.ids[q]][:k], 1)] for q in queries]


def strategies_file(sim: Simulated, path: Path) -> Path:
    """A strategies file declaring SKILLS' strategies over ``sim``."""
    lines = []
    for name in SKILLS:
        lines += [f"[strategy.{name}]", 'kind = "python"', 'class = "tests.engine.judges.simulated:SimulatedSearch"',
                  f'args = {{ folder = "{sim.folder}", strategy = "{name}" }}', ""]
    path.write_text("\n".join(lines))
    return path
