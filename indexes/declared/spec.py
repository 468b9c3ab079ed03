"""The strategies file: external strategies declared in TOML, checked once, at the boundary.

    [strategy.prod-es]
    kind = "http"
    url = "http://127.0.0.1:9200/docs/_search"
    body = '{"size": {{k}}, "query": {"match": {"text": {{query}}}}}'
    hits = "hits.hits"
    id = "_id"
    headers = { Authorization = "env:PROD_SEARCH_AUTH" }

Each ``[strategy.NAME]`` table is one strategy; ``kind`` picks its backend module, whose ``KEYS``
say which keys it takes (type, default, required) and whose ``check`` applies the rules across
keys. Every problem is one line naming the file, the strategy, the key and the fix.

Secrets: a value written ``"env:NAME"`` is read from the environment when the strategy is built
(``resolve_env``), never before, and never stored: the declaration kept with a run holds the
``env:NAME`` text. A header that carries credentials (Authorization, API keys, tokens, cookies)
must be an ``env:`` value, and a URL must not hold a password.
"""

from __future__ import annotations

import os
import tomllib
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from searchgrade.core.records import SearchGradeError
from searchgrade.indexes.registry import BUILTIN, NAME_PATTERN, RERANK_SUFFIX

#: The environment variable naming a strategies file when --strategies-file is not given.
ENV_STRATEGIES_FILE = "SEARCHGRADE_STRATEGIES_FILE"
#: Prefix of a value read from the environment.
ENV_PREFIX = "env:"
#: Header names whose values are credentials: only ``env:`` values are accepted.
SECRET_HEADER_WORDS = ("authorization", "api-key", "apikey", "api_key", "token", "secret", "cookie",
                       "password")


@dataclass(frozen=True)
class Key:
    """One key a kind accepts.

    Attributes:
        types: accepted Python types of the TOML value.
        default: the value when the key is absent.
        required: whether the key must be given.
        example: how a valid value looks, for the message.
    """

    types: tuple[type, ...]
    default: Any = None
    required: bool = False
    example: str = ""


#: Keys every kind takes.
COMMON_KEYS: dict[str, Key] = {
    "kind": Key((str,), required=True, example='"http"'),
    "rerank": Key((bool,), False, example="true (also grade NAME_rerank: our cross-encoder on its top candidates)"),
}


@dataclass(frozen=True)
class StrategySpec:
    """One declared strategy, checked.

    Attributes:
        name: the strategy's name (``[strategy.NAME]``).
        kind: "http", "elasticsearch", "opensearch", "milvus" or "python".
        options: every key of the kind with its value or default (``env:`` values as written).
        rerank: also grade ``NAME_rerank``.
        source: where it was declared ("strategies.toml", "entry point ..."), for messages.
    """

    name: str
    kind: str
    options: dict[str, Any] = field(default_factory=dict)
    rerank: bool = False
    source: str = ""

    @property
    def where(self) -> str:
        return f"{self.source}: [strategy.{self.name}]" if self.source else f"[strategy.{self.name}]"

    def to_json(self) -> dict[str, Any]:
        """The declaration as stored with a run: ``env:`` values stay ``env:NAME``."""
        return {"kind": self.kind, "rerank": self.rerank, "source": self.source, **self.options}

    @classmethod
    def from_json(cls, name: str, d: Mapping[str, Any]) -> StrategySpec:
        options = {k: v for k, v in d.items() if k not in ("kind", "rerank", "source")}
        return cls(name, str(d["kind"]), options, bool(d.get("rerank")), str(d.get("source") or ""))


def _kinds() -> dict[str, tuple[dict[str, Key], Callable[[StrategySpec], StrategySpec]]]:
    from searchgrade.indexes.declared import http, milvus, plugin

    return {
        "http": (http.KEYS, http.check),
        "elasticsearch": (http.PRESET_KEYS, http.check_preset),
        "opensearch": (http.PRESET_KEYS, http.check_preset),
        "milvus": (milvus.KEYS, milvus.check),
        "python": (plugin.KEYS, plugin.check),
    }


def kinds() -> tuple[str, ...]:
    return tuple(_kinds())


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
    known = _kinds()
    kind = table.get("kind")
    if kind is None:
        raise SearchGradeError(f"{where}: missing key 'kind': add kind = one of {', '.join(known)}")
    if kind not in known:
        raise SearchGradeError(f"{where}: unknown kind {kind!r}: use one of {', '.join(known)}")
    keys, check = known[kind]
    allowed = {**COMMON_KEYS, **keys}
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
    options.pop("kind")
    rerank = bool(options.pop("rerank", False))
    spec = StrategySpec(name, kind, options, rerank, source)
    return check(spec)


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
    others = sorted(set(data) - {"strategy"})
    if others:
        raise SearchGradeError(f"{source}: unknown top-level key {others[0]!r}: declare each "
                               "strategy as [strategy.NAME]")
    if not isinstance(tables, dict) or not tables:
        raise SearchGradeError(f"{source} declares no strategy: add a [strategy.NAME] table with "
                               "kind = \"http\" (or elasticsearch, opensearch, milvus, python)")
    return {name: parse_spec(name, table, source) for name, table in tables.items()}


def strategies_file_from_env(explicit: str | None, environ: Mapping[str, str] | None = None) -> str | None:
    """--strategies-file if given, else $SEARCHGRADE_STRATEGIES_FILE, else None."""
    if explicit:
        return explicit
    value = (environ if environ is not None else os.environ).get(ENV_STRATEGIES_FILE, "").strip()
    return value or None


def is_env(value: Any) -> bool:
    return isinstance(value, str) and value.startswith(ENV_PREFIX)


def resolve_env(value: Any, where: str, key: str, environ: Mapping[str, str] | None = None) -> Any:
    """``value`` with ``env:NAME`` replaced by the environment variable NAME.

    Raises:
        SearchGradeError: NAME is not set (or empty).
    """
    if not is_env(value):
        return value
    env_name = value[len(ENV_PREFIX):].strip()
    if not env_name:
        raise SearchGradeError(f"{where}: {key} = \"env:\" names no variable: write env:NAME")
    found = (environ if environ is not None else os.environ).get(env_name)
    if not found:
        raise SearchGradeError(f"{where}: {key} reads ${env_name} (env:{env_name}), which is not set: "
                               f"export {env_name}=... in the environment that runs searchgrade")
    return found


def check_secret_free(where: str, key: str, value: str) -> None:
    """A literal value that looks like a credential is refused (it would be stored with runs)."""
    if is_env(value):
        return
    raise SearchGradeError(f"{where}: {key} holds a literal secret: put it in the environment "
                           f"and write {key} = \"env:NAME\" (the file is stored with every run)")


def check_url(where: str, key: str, url: str, schemes: tuple[str, ...] = ("http", "https")) -> None:
    """A URL with an allowed scheme, a host, and no password in it."""
    parsed = urllib.parse.urlsplit(url.replace("{{query}}", "q").replace("{{k}}", "10"))
    if parsed.scheme not in schemes or not parsed.netloc:
        raise SearchGradeError(f"{where}: {key} {url!r} is not a {'/'.join(schemes)} URL: write e.g. "
                               f"{key} = \"http://127.0.0.1:9200/docs/_search\"")
    if parsed.password:
        raise SearchGradeError(f"{where}: {key} holds a password: put credentials in a header read "
                               "from the environment (headers = { Authorization = \"env:NAME\" })")


def is_secret_header(name: str) -> bool:
    lowered = name.lower()
    return any(word in lowered for word in SECRET_HEADER_WORDS)


def check_environment(spec: StrategySpec, environ: Mapping[str, str] | None = None) -> None:
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
