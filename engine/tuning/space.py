"""A search space: the parameters a tuner may change, each with its range or its choices.

A space file is TOML with one ``[params]`` table (an optional top-level ``strategy`` names the
strategy it is for)::

    strategy = "hybrid"
    [params]
    method = ["rrf", "wrrf", "combsum", "combmnz", "convex"]   # a list of strings: a choice
    norm = ["minmax", "zscore"]
    weight = [0.0, 1.0]                                       # two numbers: a range [low, high]
    fusion_depth = [20, 100]
    boost_title = [1, 5]               # a declared strategy's {{boost_title}}
    fields = { choices = ["title^2,text", "text"] }           # a choice of anything

The built-in parameters (``BUILTIN``) each have a type and bounds, and apply to some strategy
kinds (``PARAMS_OF``); any other name must be a template variable of the declared strategy being
tuned. ``default_space(kind)`` is what ``searchgrade tune RUN`` uses without a file.
"""

from __future__ import annotations

import math
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from searchgrade.core.records import SearchGradeError
from searchgrade.indexes.builtin.fusion import METHODS, NORMS


@dataclass(frozen=True)
class Param:
    """One dimension of a space: a range (``low``..``high``, "int" or "float") or ``choices``."""

    name: str
    kind: str  # "int", "float" or "choice"
    low: float | None = None
    high: float | None = None
    choices: tuple[Any, ...] = ()
    step: float | None = None

    def to_json(self) -> dict[str, Any]:
        if self.kind == "choice":
            return {"name": self.name, "kind": "choice", "choices": list(self.choices)}
        out: dict[str, Any] = {"name": self.name, "kind": self.kind, "low": self.low, "high": self.high}
        if self.step is not None:
            out["step"] = self.step
        return out

    def describe(self) -> str:
        if self.kind == "choice":
            return f"{self.name} in {{{', '.join(map(str, self.choices))}}}"
        return f"{self.name} in [{self.low:g}, {self.high:g}]"


@dataclass(frozen=True)
class Bound:
    """What a built-in parameter may be: its type, its bounds, the choices it allows."""

    kind: str
    low: float | None = None
    high: float | None = None
    choices: tuple[str, ...] = ()
    step: float | None = None
    help: str = ""


#: The built-in parameters a space may name.
BUILTIN: dict[str, Bound] = {
    "bm25_k1": Bound("float", 0.0, 10.0, step=0.05, help="BM25 term-frequency saturation"),
    "bm25_b": Bound("float", 0.0, 1.0, step=0.05, help="BM25 length normalisation"),
    "method": Bound("choice", choices=METHODS, help="fusion method"),
    "norm": Bound("choice", choices=tuple(n for n in NORMS if n != "none"), help="score normalisation"),
    "weight": Bound("float", 0.0, 1.0, help="the ANN list's weight (the full-text list gets 1 - weight)"),
    "fusion_depth": Bound("int", 1, 10_000, help="entries of each list fused"),
    "rrf_k": Bound("int", 0, 10_000, help="the RRF constant"),
    "rerank_depth": Bound("int", 1, 10_000, help="candidates the cross-encoder rescores"),
    "ivf_nprobe": Bound("int", 1, 65_536, help="inverted lists an IVF search visits (capped at nlist)"),
}

#: The built-in parameters of each kind of strategy.
PARAMS_OF: dict[str, tuple[str, ...]] = {
    "fulltext": ("bm25_k1", "bm25_b"),
    "hybrid": ("method", "norm", "weight", "fusion_depth", "rrf_k", "bm25_k1", "bm25_b"),
    "rerank": ("rerank_depth",),
    "ann-ivf": ("ivf_nprobe",),
    "declared": (),
}

#: What ``tune RUN`` searches without --space, per kind.
DEFAULT_SPACES: dict[str, dict[str, Any]] = {
    "fulltext": {"bm25_k1": [0.5, 2.0], "bm25_b": [0.3, 1.0]},
    "hybrid": {"method": list(METHODS), "norm": ["minmax", "zscore", "sum"], "weight": [0.0, 1.0],
               "fusion_depth": [10, 100], "rrf_k": [1, 100]},
    "rerank": {"rerank_depth": [10, 100]},
    "ann-ivf": {"ivf_nprobe": [1, 64]},
}


@dataclass(frozen=True)
class Space:
    """The parameters of one tuning, in the order written."""

    params: tuple[Param, ...]
    source: str = "the default space"

    def names(self) -> list[str]:
        return [p.name for p in self.params]

    def to_json(self) -> list[dict[str, Any]]:
        return [p.to_json() for p in self.params]

    @classmethod
    def from_json(cls, items: Sequence[Mapping[str, Any]], source: str = "stored") -> Space:
        return cls(tuple(Param(i["name"], i["kind"], i.get("low"), i.get("high"), tuple(i.get("choices", ())),
                               i.get("step")) for i in items), source)


def read_space_file(path: str | Path) -> tuple[dict[str, Any], str | None, str]:
    """A space file's ``[params]`` table, its ``strategy`` (or None) and its name for messages.

    Raises:
        SearchGradeError: missing, unreadable, not TOML, or without a [params] table.
    """
    path = Path(path).expanduser()
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SearchGradeError(f"space file {path} does not exist: check --space") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SearchGradeError(f"cannot read space file {path} ({exc}): pass a readable TOML file") from None
    except tomllib.TOMLDecodeError as exc:
        raise SearchGradeError(f"{path.name} is not valid TOML ({exc}): fix the file; see docs/tuning.md") from None
    others = sorted(set(data) - {"params", "strategy"})
    if others:
        raise SearchGradeError(f"{path.name}: unknown top-level key {others[0]!r}: the file holds "
                               "strategy = \"NAME\" and a [params] table")
    params = data.get("params")
    if not isinstance(params, dict) or not params:
        raise SearchGradeError(f"{path.name} has no [params] table: add one, e.g. [params] bm25_k1 = [0.5, 2.0]")
    strategy = data.get("strategy")
    if strategy is not None and not isinstance(strategy, str):
        raise SearchGradeError(f"{path.name}: strategy must be a strategy name, got {strategy!r}")
    return params, strategy, path.name


def parse_space(table: Mapping[str, Any], kind: str, strategy: str, *, variables: Sequence[str] = (),
                source: str = "the default space") -> Space:
    """Check a ``[params]`` table for a strategy of ``kind`` (a key of PARAMS_OF).

    ``variables``: the template variables of a declared strategy (its ``{{NAME}}``s other than
    query and k); every non-built-in name must be one of them.

    Raises:
        SearchGradeError: one line for the first problem: an unknown parameter, an empty or
            out-of-bounds range, a variable the template lacks, a choice the parameter does not allow.
    """
    allowed = PARAMS_OF[kind]
    params = []
    for name, value in table.items():
        bound = BUILTIN.get(name) if name in allowed else None
        if bound is None:
            if kind == "declared":
                if name not in variables:
                    have = ", ".join(variables) if variables else "none"
                    raise SearchGradeError(
                        f"{source}: {name!r} is not a variable of strategy {strategy}'s templates "
                        f"(its variables: {have}): add {{{{{name}}}}} to its body or drop {name} from the space")
                bound = Bound("int" if _all_ints(value) else "float", -math.inf, math.inf)
            else:
                known = ", ".join(allowed) or "none"
                raise SearchGradeError(f"{source}: unknown parameter {name!r} for strategy {strategy}: "
                                       f"its parameters are {known}")
        params.append(_param(name, value, bound, source))
    if not params:
        raise SearchGradeError(f"{source}: the space is empty: name at least one parameter")
    return Space(tuple(params), source)


def _all_ints(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, int) and not isinstance(v, bool) for v in value)


def _param(name: str, value: Any, bound: Bound, source: str) -> Param:
    where = f"{source}: {name}"
    if isinstance(value, dict):
        if set(value) != {"choices"} or not isinstance(value["choices"], list):
            raise SearchGradeError(f"{where} = {value!r}: write a range [low, high], a list of strings, or "
                                   "{ choices = [...] }")
        return _choice(name, value["choices"], bound, where)
    if not isinstance(value, list):
        raise SearchGradeError(f"{where} = {value!r}: write a range [low, high] or a list of choices")
    if value and all(isinstance(v, str) for v in value):
        return _choice(name, value, bound, where)
    if bound.kind == "choice":
        raise SearchGradeError(f"{where} = {value!r}: {name} is a choice: list some of "
                               f"{', '.join(bound.choices)}")
    numbers = len(value) == 2 and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value)
    if not numbers:
        raise SearchGradeError(f"{where} = {value!r}: a range is two numbers [low, high], e.g. [0.5, 2.0]")
    low, high = float(value[0]), float(value[1])
    if not (math.isfinite(low) and math.isfinite(high)) or low >= high:
        raise SearchGradeError(f"{where} = {value!r} is an empty range: write [low, high] with low < high")
    if bound.low is not None and (low < bound.low or high > bound.high):
        raise SearchGradeError(f"{where} = {value!r} leaves the allowed [{bound.low:g}, {bound.high:g}] of "
                               f"{name}: narrow the range")
    if bound.kind == "int":
        if low != int(low) or high != int(high):
            raise SearchGradeError(f"{where} = {value!r}: {name} is a whole number: write whole bounds")
        return Param(name, "int", int(low), int(high))
    return Param(name, "float", low, high, step=bound.step)


def _choice(name: str, choices: list[Any], bound: Bound, where: str) -> Param:
    if not choices:
        raise SearchGradeError(f"{where} = []: an empty choice: list at least one value")
    if bound.kind == "choice":
        bad = [c for c in choices if c not in bound.choices]
        if bad:
            raise SearchGradeError(f"{where}: {bad[0]!r} is not a {name}: use some of {', '.join(bound.choices)}")
    elif bound.low is not None and math.isfinite(bound.low):
        raise SearchGradeError(f"{where}: {name} is a number: write a range [low, high]")
    if len(set(map(repr, choices))) != len(choices):
        raise SearchGradeError(f"{where}: a choice is listed twice: list each once")
    return Param(name, "choice", choices=tuple(choices))


def default_space(kind: str, strategy: str) -> Space:
    """The space ``tune RUN`` searches for a strategy of ``kind`` without --space.

    Raises:
        SearchGradeError: the kind has nothing to tune by default (exact ANN, a declared strategy).
    """
    table = DEFAULT_SPACES.get(kind)
    if table is None:
        raise SearchGradeError(_NOTHING.get(kind, f"strategy {strategy} has no default space: give --space FILE")
                               .format(strategy=strategy))
    return parse_space(table, kind, strategy)


_NOTHING = {
    "ann": "strategy {strategy} is exact nearest-neighbour search: it has nothing to tune (tune hybrid, "
           "fulltext or a reranked strategy instead)",
    "declared": "strategy {strategy} has no default space: give --space FILE with a range for each of its "
                "template variables, e.g. [params] boost_title = [1, 5]",
}
