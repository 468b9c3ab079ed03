"""A Python class as a strategy: anything with ``search(queries, k)`` returning ranked lists.

Declared by class path (``class = "package.module:Name"``) or found through the entry-point
group ``searchgrade.strategies`` (``entry_point = "NAME"``, or installed plugins, which appear as
strategies named after their entry point). ``args`` are passed to the class as keyword arguments.

``search(queries, k)`` gets a list of query texts and returns one list per query, best first, of
``(doc_id, score)`` pairs, or of mappings with ``id`` and optionally ``score``, ``title`` and
``text`` (a described document, shown and judged when its id is not in the collection). Queries
are passed ``batch_size`` at a time; each query's latency is its share of its batch's call. An
exception from ``search`` fails the queries of that batch (recorded, never scored as empty).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from typing import Any

from searchgrade.core.records import Document, ScoredDoc, SearchGradeError
from searchgrade.indexes.base import FailedAttempt, Found, Outcome, QueryBatch, answer_each
from searchgrade.indexes.declared.declaration import Key, StrategySpec
from searchgrade.indexes.declared.node import DeclaredNode

#: The entry-point group plugins register their strategy classes in.
ENTRY_POINT_GROUP = "searchgrade.strategies"

KEYS: dict[str, Key] = {
    "class": Key((str,), None, example='"my_package.search:MySearch"'),
    "entry_point": Key((str,), None, example=f'"NAME" (an entry point of group {ENTRY_POINT_GROUP})'),
    "args": Key((dict,), None, example='{ index_path = "/data/my-index" }'),
    "batch_size": Key((int,), 16, example="16"),
}


def check(spec: StrategySpec) -> StrategySpec:
    o, where = spec.options, spec.where
    if bool(o.get("class")) == bool(o.get("entry_point")):
        raise SearchGradeError(f"{where}: give either class = {KEYS['class'].example} or entry_point = "
                               f"{KEYS['entry_point'].example}")
    if o.get("class") and ":" not in o["class"]:
        raise SearchGradeError(f"{where}: class {o['class']!r} must be \"package.module:ClassName\"")
    if o["batch_size"] < 1:
        raise SearchGradeError(f"{where}: batch_size must be >= 1, got {o['batch_size']!r}")
    return spec


def entry_point_specs() -> dict[str, StrategySpec]:
    """The strategies installed packages register in the ``searchgrade.strategies`` group, by
    entry-point name (the registry keeps those whose name is a strategy name)."""
    from importlib.metadata import entry_points

    return {ep.name: StrategySpec(ep.name, "python", {"class": None, "entry_point": ep.name,
                                                      "args": None, "batch_size": 16},
                                  False, f"entry point {ep.value}")
            for ep in entry_points(group=ENTRY_POINT_GROUP)}


def load_class(spec: StrategySpec) -> Any:
    """The class a declaration names.

    Raises:
        SearchGradeError: the module, the class or the entry point cannot be found or imported.
    """
    o, where = spec.options, spec.where
    if o.get("entry_point"):
        from importlib.metadata import entry_points

        matches = [ep for ep in entry_points(group=ENTRY_POINT_GROUP) if ep.name == o["entry_point"]]
        if not matches:
            raise SearchGradeError(f"{where}: no entry point {o['entry_point']!r} in group "
                                   f"{ENTRY_POINT_GROUP}: install the package that provides it")
        try:
            return matches[0].load()
        except Exception as exc:  # noqa: BLE001 - any import failure is the plugin's problem, said in one line
            raise SearchGradeError(f"{where}: entry point {o['entry_point']!r} ({matches[0].value}) "
                                   f"cannot be loaded ({type(exc).__name__}: {exc})") from None
    module_name, _, class_name = o["class"].partition(":")
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # noqa: BLE001 - ModuleNotFoundError or the module's own error
        raise SearchGradeError(f"{where}: cannot import module {module_name!r} ({type(exc).__name__}: "
                               f"{exc}): install it or put it on PYTHONPATH") from None
    target: Any = module
    for part in class_name.split("."):
        target = getattr(target, part, None)
        if target is None:
            raise SearchGradeError(f"{where}: module {module_name!r} has no {class_name!r}: check class")
    return target


class PluginNode(DeclaredNode):
    """A declared Python strategy as an executor node: ``batch_size`` queries per call."""

    def __init__(self, spec: StrategySpec, instance: Any) -> None:
        super().__init__(spec, batch_size=int(spec.options.get("batch_size") or 16))
        self.instance = instance

    def answer(self, batch: QueryBatch, depth: int,
               inputs: Mapping[str, Sequence[Outcome]]) -> list[Outcome]:  # noqa: ARG002 - the node contract's signature
        return answer_each(list(batch.texts), lambda texts: self.search_many(texts, depth),
                           batch_size=self.batch_size, explain=self.explain)

    def search_many(self, texts: list[str], depth: int) -> list[Found]:
        """One call of the plugin's ``search`` for ``texts``, its lists read and checked."""
        lists = self.instance.search(texts, depth)
        return [self._read(ranked, depth) for ranked in self._lists(lists, len(texts))]

    def explain(self, exc: Exception, attempt: int) -> FailedAttempt:  # noqa: ARG002 - never retried
        if isinstance(exc, SearchGradeError):
            return FailedAttempt(str(exc))
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        return FailedAttempt(f"search() raised {type(exc).__name__}: {first}".rstrip(": "))

    def _lists(self, lists: Any, n: int) -> list[Any]:
        if not isinstance(lists, Sequence) or isinstance(lists, (str, bytes)) or len(lists) != n:
            got = f"{len(lists)} lists" if isinstance(lists, Sequence) else type(lists).__name__
            raise SearchGradeError(f"search() returned {got} for {n} quer{'y' if n == 1 else 'ies'}: it must return one "
                                   "ranked list of (doc_id, score) per query")
        return list(lists)

    def _read(self, ranked: Any, depth: int) -> Found:
        docs: list[ScoredDoc] = []
        described: dict[str, Document] = {}
        seen: set[str] = set()
        for position, item in enumerate(ranked, start=1):
            title = text = ""
            if isinstance(item, Mapping):
                doc_id, score = item.get("id", item.get("doc_id")), item.get("score", 1.0 / position)
                title, text = str(item.get("title") or ""), str(item.get("text") or "")
            elif isinstance(item, Sequence) and not isinstance(item, (str, bytes)) and len(item) >= 1:
                doc_id, score = item[0], item[1] if len(item) > 1 else 1.0 / position
            else:
                raise SearchGradeError(f"search() gave {item!r} at rank {position}: each result must "
                                       "be (doc_id, score) or a mapping with 'id' and 'score'")
            if doc_id is None or isinstance(doc_id, bool) or doc_id == "":
                raise SearchGradeError(f"search() gave no doc id at rank {position} ({item!r})")
            try:
                score = float(score)
            except (TypeError, ValueError):
                raise SearchGradeError(f"search() gave score {score!r} at rank {position}: it must "
                                       "be a number") from None
            doc_id = str(doc_id)
            if doc_id in seen:
                continue
            seen.add(doc_id)
            if title or text:
                described[doc_id] = Document(doc_id, title, text)
            docs.append(ScoredDoc(doc_id, score, len(docs) + 1))
            if len(docs) == depth:
                break
        return Found(docs, described)


def build_node(spec: StrategySpec, ctx: Any) -> PluginNode:
    cls = load_class(spec)
    try:
        instance = cls(**(spec.options.get("args") or {}))
    except Exception as exc:  # noqa: BLE001 - the plugin's constructor, said in one line
        raise SearchGradeError(f"{spec.where}: {getattr(cls, '__name__', cls)}(...) raised "
                               f"{type(exc).__name__}: {exc}: check args") from None
    if not callable(getattr(instance, "search", None)):
        raise SearchGradeError(f"{spec.where}: {getattr(cls, '__name__', cls)} has no search(queries, k) "
                               "method")
    return PluginNode(spec, instance)
