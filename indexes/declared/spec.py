"""The strategies file: external strategies declared in TOML, checked once, at the boundary.

    [strategy.prod-es]
    kind = "http"
    url = "http://127.0.0.1:9200/docs/_search"
    body = '{"size": {{k}}, "query": {"match": {"text": {{query}}}}}'
    hits = "hits.hits"
    id = "_id"
    headers = { Authorization = "env:PROD_SEARCH_AUTH" }

Each ``[strategy.NAME]`` table is one strategy; ``kind`` picks its registration in
indexes/declared/kinds.py, whose ``keys`` say which keys it takes (type, default, required) and
whose ``check`` applies the rules across keys. Every problem is one line naming the file, the
strategy, the key and the fix. ``env:NAME`` values are kept as written until the strategy is built
(indexes/declared/declaration.py); ``check_environment`` says before a run starts which are unset.
"""

from __future__ import annotations

import dataclasses
import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from searchgrade.core.records import SearchGradeError
from searchgrade.indexes.declared.declaration import COMMON_KEYS, StrategySpec, is_env, resolve_env
from searchgrade.indexes.declared.kinds import KINDS
from searchgrade.indexes.declared.rerankers import (
    RERANKER_KINDS,
    RerankerSpec,
    check_reranker_name,
    note_rerankers,
)
from searchgrade.indexes.registry import BUILTIN, NAME_PATTERN, RERANK_SUFFIX
from searchgrade.indexes.rerank import http as _http_rerankers  # noqa: F401  (registers its kinds)
from searchgrade.indexes.rerank import llm_kind as _llm_reranker  # noqa: F401  (registers "llm")

__all__ = ["ENV_STRATEGIES_FILE", "RerankerSpec", "StrategySpec", "check_environment", "load_rerankers_file",
           "load_strategies_file", "parse_spec", "strategies_file_from_env"]

#: The environment variable naming a strategies file when --strategies-file is not given.
ENV_STRATEGIES_FILE = "SEARCHGRADE_STRATEGIES_FILE"


def _type_name(types: tuple[type, ...]) -> str:
    names = {str: "a string", bool: "true or false", int: "a whole number", float: "a number",
             dict: "a table", list: "a list"}
    return " or ".join(names.get(t, t.__name__) for t in types)


def parse_spec(name: str, table: Any, source: str = "") -> StrategySpec:
    """Check one ``[strategy.NAME]`` table against its kind's keys and rules.

    Raises:
        SearchGradeError: one line naming the strategy, the key and the fix.
    """
    where = f"{source}: [strategy.{name}]" if source else f"[strategy.{name}]"
    if not isinstance(name, str) or not NAME_PATTERN.fullmatch(name):
        raise SearchGradeError(f"{source}: strategy name {name!r} is not allowed: use lower-case "
                               "letters, digits, '_' and '-' only, e.g. [strategy.prod-es]")
    if name.endswith(RERANK_SUFFIX):
        raise SearchGradeError(f"{where}: names ending in {RERANK_SUFFIX!r} are kept for reranked "
                               f"strategies: name it {name[:-len(RERANK_SUFFIX)]!r} with rerank = true")
    if name in BUILTIN:
        raise SearchGradeError(f"{where}: {name!r} is the name of a built-in strategy: give it "
                               f"another name, e.g. [strategy.my-{name}]")
    if not isinstance(table, dict):
        raise SearchGradeError(f"{where} must be a table of keys (kind = \"http\", url = ...), "
                               f"got {table!r}")
    kind = table.get("kind")
    if kind is None:
        raise SearchGradeError(f"{where}: missing key 'kind': add kind = one of {', '.join(KINDS)}")
    if kind not in KINDS:
        raise SearchGradeError(f"{where}: unknown kind {kind!r}: use one of {', '.join(KINDS)}")
    options = check_keys(where, kind, table, {**COMMON_KEYS, **KINDS[kind].keys}, KINDS[kind].keys)
    options.pop("kind")
    rerank, rerankers = _rerank_value(where, options.pop("rerank", False))
    checked = KINDS[kind].check(StrategySpec(name, kind, options, rerank, source))
    return dataclasses.replace(checked, rerankers=rerankers) if rerankers else checked


def check_keys(where: str, kind: str, table: Mapping[str, Any], allowed: Mapping[str, Any],
               keys: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """A declaration's keys checked against ``allowed`` (name -> Key: type, default, required),
    with the defaults of ``keys`` (default: ``allowed``) filled in.

    Raises:
        SearchGradeError: an unknown key, a value of the wrong type, a missing required key.
    """
    keys = allowed if keys is None else keys
    options: dict[str, Any] = {}
    for key, value in table.items():
        rule = allowed.get(key)
        if rule is None:
            raise SearchGradeError(f"{where}: unknown key {key!r} for kind {kind!r}: the keys are "
                                   f"{', '.join(sorted(allowed))}")
        types = rule.types + ((int,) if float in rule.types else ())
        if not isinstance(value, types) or (isinstance(value, bool) and bool not in rule.types):
            raise SearchGradeError(f"{where}: {key} must be {_type_name(rule.types)}, got {value!r}; "
                                   f"e.g. {key} = {rule.example}")
        options[key] = float(value) if float in rule.types and isinstance(value, int) else value
    for key, rule in keys.items():
        if key not in options:
            if rule.required:
                raise SearchGradeError(f"{where}: missing key {key!r}: add {key} = {rule.example}")
            options[key] = rule.default
    return options


def _rerank_value(where: str, value: Any) -> tuple[bool, tuple[str, ...]]:
    """``rerank``: true (the run's default reranker, NAME_rerank), a declared reranker's name, or a
    list of them ("default" in a list: the run's default one too)."""
    if isinstance(value, bool):
        return value, ()
    names = [value] if isinstance(value, str) else value
    if not names or not all(isinstance(n, str) and n for n in names):
        raise SearchGradeError(f"{where}: rerank must be true, a reranker's name or a list of names, got "
                               f"{value!r}; e.g. rerank = [\"cohere\", \"tei\"]")
    default = "default" in names or "rerank" in names
    return default, tuple(dict.fromkeys(n for n in names if n not in ("default", "rerank")))


def parse_reranker(name: Any, table: Any, source: str = "") -> RerankerSpec:
    """Check one ``[reranker.NAME]`` table against its kind's keys and rules
    (indexes/declared/rerankers.py).

    Raises:
        SearchGradeError: one line naming the reranker, the key and the fix.
    """
    check_reranker_name(name, source)
    where = f"{source}: [reranker.{name}]" if source else f"[reranker.{name}]"
    if not isinstance(table, dict):
        raise SearchGradeError(f"{where} must be a table of keys (kind = \"tei\", url = ...), got {table!r}")
    kind = table.get("kind")
    if kind is None:
        raise SearchGradeError(f"{where}: missing key 'kind': add kind = one of {', '.join(RERANKER_KINDS)}")
    if kind not in RERANKER_KINDS:
        raise SearchGradeError(f"{where}: unknown kind {kind!r}: use one of {', '.join(RERANKER_KINDS)}")
    options = check_keys(where, kind, {k: v for k, v in table.items() if k != "kind"}, RERANKER_KINDS[kind].keys)
    spec = RERANKER_KINDS[kind].check(RerankerSpec(name, kind, options, source))
    note_rerankers([name])
    return spec


def parse_rerankers(tables: Any, source: str = "") -> dict[str, RerankerSpec]:
    """Every ``[reranker.NAME]`` of a strategies file (``{}`` when it declares none)."""
    if tables is None:
        return {}
    if not isinstance(tables, dict):
        raise SearchGradeError(f"{source}: reranker must hold [reranker.NAME] tables, got {tables!r}")
    return {name: parse_reranker(name, table, source) for name, table in tables.items()}


def load_strategies_file(path: str | os.PathLike[str]) -> dict[str, StrategySpec]:
    """Every strategy a strategies file declares, checked, in file order.

    Raises:
        SearchGradeError: the file is missing or unreadable, is not TOML, declares no strategy,
            or a declaration is wrong (one line naming the key and the fix).
    """
    path = Path(path).expanduser()
    source = path.name
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SearchGradeError(f"strategies file {path} does not exist: check --strategies-file "
                               f"(or ${ENV_STRATEGIES_FILE})") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SearchGradeError(f"cannot read strategies file {path} ({exc}): pass a readable UTF-8 "
                               "TOML file") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SearchGradeError(f"{source} is not valid TOML ({exc}): fix the file; see the "
                               "README's 'Grading your own search' for the form") from None
    tables = data.get("strategy")
    others = sorted(set(data) - {"strategy", "reranker", "sweep"})
    if others:
        raise SearchGradeError(f"{source}: unknown top-level key {others[0]!r}: declare each "
                               "strategy as [strategy.NAME] (each reranker as [reranker.NAME], each sweep "
                               "as [sweep.NAME])")
    if tables is None and (data.get("reranker") or data.get("sweep")):
        tables = {}  # a file of rerankers only (for --rerankers over the built-ins), or of sweeps
    elif not isinstance(tables, dict) or not tables:
        first, *rest = KINDS
        raise SearchGradeError(f"{source} declares no strategy: add a [strategy.NAME] table with "
                               f"kind = \"{first}\" (or {', '.join(rest)})")
    specs = {name: parse_spec(name, table, source) for name, table in tables.items()}
    for name, spec in sweep_specs(data.get("sweep"), source)[1].items():
        if name in specs:
            raise SearchGradeError(f"{spec.source}: makes a variant named {name!r}, which the file declares "
                                   f"as [strategy.{name}] too: rename one")
        specs[name] = spec
    rerankers = parse_rerankers(data.get("reranker"), source)
    for spec in specs.values():
        for name in spec.rerankers:
            if name not in rerankers:
                raise SearchGradeError(f"{spec.where}: rerank names {name!r}, which the file does not declare: "
                                       f"add a [reranker.{name}] table"
                                       + (f" or use one of {', '.join(rerankers)}" if rerankers else ""))
    return specs


def sweep_specs(tables: Any, source: str = "") -> tuple[dict[str, Any], dict[str, StrategySpec]]:
    """The ``[sweep.NAME]`` tables of a strategies file: each Sweep (indexes/variants/sweep.py) by
    name, and every variant they make, checked as a ``[strategy.NAME]`` of its kind.

    Raises:
        SearchGradeError: a bad sweep, or a variant its kind refuses (one line naming the sweep).
    """
    from searchgrade.indexes.variants.sweep import parse_sweep

    if tables is None:
        return {}, {}
    if not isinstance(tables, dict):
        raise SearchGradeError(f"{source}: sweep must hold [sweep.NAME] tables, got {tables!r}")
    sweeps: dict[str, Any] = {}
    specs: dict[str, StrategySpec] = {}
    for name, table in tables.items():
        sweep, variants = parse_sweep(name, table, source)
        sweeps[name] = sweep
        where = f"{source} [sweep.{name}]" if source else f"[sweep.{name}]"
        for variant, variant_table in variants.items():
            if variant in specs:
                raise SearchGradeError(f"{where}: makes {variant!r}, which another sweep makes too: rename a sweep")
            specs[variant] = parse_spec(variant, variant_table, where)
    return sweeps, specs


def load_sweeps(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The sweeps of a strategies file (``[sweep.NAME]``) as Sweep records (the file checked whole first)."""
    load_strategies_file(path)
    path = Path(path).expanduser()
    return sweep_specs(_read_toml(path).get("sweep"), path.name)[0]


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise SearchGradeError(f"cannot read strategies file {path} ({exc})") from None


def load_rerankers_file(path: str | os.PathLike[str]) -> dict[str, RerankerSpec]:
    """Every reranker a strategies file declares (``[reranker.NAME]``), checked, in file order.

    Raises:
        SearchGradeError: as load_strategies_file (which checks the whole file first).
    """
    load_strategies_file(path)
    path = Path(path).expanduser()
    return parse_rerankers(_read_toml(path).get("reranker"), path.name)


def strategies_file_from_env(explicit: str | None, environ: Mapping[str, str] | None = None) -> str | None:
    """--strategies-file if given, else $SEARCHGRADE_STRATEGIES_FILE, else None."""
    if explicit:
        return explicit
    value = (environ if environ is not None else os.environ).get(ENV_STRATEGIES_FILE, "").strip()
    return value or None


def check_environment(spec: StrategySpec | RerankerSpec, environ: Mapping[str, str] | None = None) -> None:
    """Every ``env:NAME`` value of a declaration is set (before a run starts, not half-way).

    Raises:
        SearchGradeError: naming the key and the variable to export.
    """

    def walk(value: Any, key: str) -> None:
        if isinstance(value, dict):
            for name, inner in value.items():
                walk(inner, f"{key}.{name}" if key else name)
        elif is_env(value):
            resolve_env(value, spec.where, key, environ)

    walk(spec.options, "")
