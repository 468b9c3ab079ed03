"""A judge as the command line names it, its price, and how a panel of judges gives one grade.

``--judge-models A,B,C`` names the judges of a panel: ``NAME`` is model NAME on the run's
endpoint, ``NAME@URL`` model NAME on the OpenAI-compatible endpoint at URL. The name as written is
the judge's name everywhere (the store's ``judge_grades``, the report, the accounting stage
``judge:NAME``); ``panel`` is the panel's own name. ``--judge-price MODEL=USD_PER_MTOK`` prices a
judge's tokens, prompt and completion alike.

The panel's grade of a pair is the median of its judges' grades, halves rounded down (the lower
median, as people's ratings combine: engine/labels/ratings.py), or with ``aggregate="mean"`` their
mean rounded to the nearest grade, halves down; judges whose judgment failed are left out, and a
pair no judge graded has no panel grade (a failure, never a grade).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

from searchgrade.core.records import SearchGradeError

#: The panel's name among the judges.
PANEL = "panel"
#: The most judges one run takes (each judges every pair: the calls grow with them).
MAX_JUDGES = 8


@dataclass(frozen=True)
class JudgeSpec:
    """One judge of a panel."""

    #: As written on the command line ("gpt-4o-mini", "qwen2.5@http://gpu:8000/v1").
    name: str
    model: str
    #: None: the run's endpoint.
    base_url: str | None = None


def parse_judge(text: str) -> JudgeSpec:
    """``NAME`` or ``NAME@URL`` (the URL http or https).

    Raises:
        SearchGradeError: an empty name, the reserved name "panel", or a URL that is not http(s).
    """
    name = text.strip()
    model, url = name, None
    at = name.rfind("@")
    if at > 0 and "://" in name[at + 1:]:
        model, url = name[:at].strip(), name[at + 1:].strip()
        scheme = urlsplit(url).scheme.lower()
        if scheme not in ("http", "https") or not urlsplit(url).hostname:
            raise SearchGradeError(f"--judge-models: {name!r} names the endpoint {url!r}, which is not an "
                                   "http(s) URL; write NAME@http://HOST:PORT/v1")
    if not model:
        raise SearchGradeError(f"--judge-models: {text!r} has no model name; write NAME or NAME@URL")
    if model == PANEL:
        raise SearchGradeError(f"--judge-models: {PANEL!r} is the panel's own name; name the judges' models")
    return JudgeSpec(name, model, url)


def parse_judge_models(text: str | Sequence[str]) -> tuple[JudgeSpec, ...]:
    """The judges of ``--judge-models A,B[,C]`` (comma-separated, or already split).

    Raises:
        SearchGradeError: no judge, a judge named twice, more than MAX_JUDGES, or a bad one.
    """
    parts = [p for item in ([text] if isinstance(text, str) else text) for p in item.split(",")]
    specs = [parse_judge(p) for p in parts if p.strip()]
    if not specs:
        raise SearchGradeError("--judge-models names no judge; write e.g. --judge-models gpt-4o-mini,qwen2.5")
    names = [s.name for s in specs]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise SearchGradeError(f"--judge-models names {', '.join(twice)} twice; name each judge once")
    if len(specs) > MAX_JUDGES:
        raise SearchGradeError(f"--judge-models names {len(specs)} judges; at most {MAX_JUDGES} (each one judges "
                               "every pair)")
    return tuple(specs)


def parse_prices(items: Sequence[str], judges: Sequence[JudgeSpec]) -> dict[str, float]:
    """``--judge-price MODEL=USD_PER_MTOK`` (repeated) as judge name -> USD per million tokens.

    MODEL is a judge's name as written in --judge-models, or its model name.

    Raises:
        SearchGradeError: not MODEL=PRICE, a price that is not a non-negative number, or a model
            that is none of the judges.
    """
    by_name = {j.name: j.name for j in judges} | {j.model: j.name for j in judges}
    prices: dict[str, float] = {}
    for item in items:
        model, sep, value = item.partition("=")
        model = model.strip()
        try:
            price = float(value)
        except ValueError:
            price = math.nan
        if not sep or not model or not math.isfinite(price) or price < 0:
            raise SearchGradeError(f"--judge-price {item!r}: write MODEL=USD_PER_MTOK, e.g. gpt-4o-mini=0.15 "
                                   "(US dollars per million tokens, prompt and completion alike)")
        if model not in by_name:
            raise SearchGradeError(f"--judge-price {item!r}: {model!r} is not one of the judges "
                                   f"({', '.join(j.name for j in judges) or 'none given'})")
        prices[by_name[model]] = price
    return prices


def lower_median(grades: Sequence[int]) -> int:
    ordered = sorted(grades)
    return ordered[(len(ordered) - 1) // 2]


def rounded_mean(grades: Sequence[int]) -> int:
    """The mean rounded to the nearest grade, halves down."""
    return math.ceil(sum(grades) / len(grades) - 0.5)


#: How a panel's grades become one (see the module).
AGGREGATES: Mapping[str, Callable[[Sequence[int]], int]] = {"median": lower_median, "mean": rounded_mean}


def panel_grade(grades: Sequence[int | None], aggregate: str = "median") -> int | None:
    """The panel's grade of a pair from its judges' (None: that judge failed); None if none graded.

    Raises:
        ValueError: an unknown aggregate.
    """
    if aggregate not in AGGREGATES:
        raise ValueError(f"aggregate {aggregate!r} is not one of {', '.join(AGGREGATES)}")
    valid = [g for g in grades if g is not None]
    return AGGREGATES[aggregate](valid) if valid else None
