"""A trained reranker on the Results page: how a run used it, and what its card says.

A run evaluated with ``--reranker-model trained:NAME`` records in ``stats["reranker"]`` which
model scored each query: the fold model that never saw it (cross-fitted) or, for a query no
training query matches, a model trained on other queries (plain). The page says which, with the
words "measured on queries the reranker never saw" when every query was held out.

Before a run, the Evaluate page asks ``reranker_problem`` whether the reranker model loads here
(checked once per model and process): offline, the reranked strategies are not preselected and the
fix named is the page's own field (``PAGE_FIX``), never the command line's flag.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from searchgrade.core.records import SearchGradeError
from searchgrade.engine.run.strategies import label, registry_for_declared
from searchgrade.engine.store import RunRecord

#: The words the page shows beside a trained reranker's figures when no query was trained on.
NEVER_SAW = "measured on queries the reranker never saw"


@dataclass(frozen=True)
class TrainedRerankerUse:
    """How one run used a trained reranker."""

    name: str
    #: "cross-fitted" (each query by the fold model that never saw it), "plain" (no query of the
    #: run was trained on) or "mixed".
    mode: str
    held_out: int
    plain: int
    source_run: str | None
    #: Candidates of each strategy it rescored (the depth its card measured), when recorded.
    depth: int | None = None

    @property
    def title(self) -> str:
        return f"Baseline vs trained reranker {self.name}"

    @property
    def line(self) -> str:
        """One line for `searchgrade show`: the reranker, its mode, and how many queries each way."""
        counts = {"cross-fitted": f"{self.held_out:,} queries each by the fold model that never saw it",
                  "plain": f"{self.plain:,} queries none of which it trained on"}.get(
            self.mode, f"{self.held_out:,} queries cross-fitted, {self.plain:,} by a model trained on "
                       "other queries")
        source = f", trained on run {self.source_run}" if self.source_run else ""
        depth = f"; top {self.depth} of each strategy rescored" if self.depth else ""
        return f"reranked strategies: trained reranker {self.name} ({self.mode}: {counts}{source}{depth})"

    @property
    def caption(self) -> str:
        if self.mode == "cross-fitted":
            return (f"{NEVER_SAW.capitalize()}: each of the {self.held_out:,} queries was reranked by "
                    f"the model of its fold, trained on the other folds of run {self.source_run} "
                    "(queries from the same source document or with the same text share a fold).")
        if self.mode == "plain":
            return (f"{NEVER_SAW.capitalize()}: the reranker was trained on other queries"
                    f"{f' (run {self.source_run})' if self.source_run else ''}, none of them one of "
                    f"these {self.plain:,}.")
        return (f"{NEVER_SAW.capitalize()}: {self.held_out:,} queries were reranked by the fold model "
                f"that did not train on them (cross-fitted), {self.plain:,} by a model trained on "
                "other queries.")


def trained_reranker_use(run: RunRecord) -> TrainedRerankerUse | None:
    """What ``run`` recorded about its trained reranker, or None when it used none."""
    info = run.stats.get("reranker") if isinstance(run.stats, dict) else None
    if not info or not info.get("trained"):
        return None
    return TrainedRerankerUse(str(info["trained"]), str(info.get("mode", "plain")),
                              int(info.get("held_out", 0)), int(info.get("plain", 0)),
                              info.get("source_run"), info.get("max_depth"))


def card_figures(card: dict[str, Any], *, alone: bool = False) -> pd.DataFrame:
    """A reranker card's held-out figures as the page's table (blended, or the cross-encoder alone).

    The verdict is the interval's, as everywhere on the page: "significant" exactly when the
    interval shown beside it excludes 0. Cards since the one paired procedure give an adjusted
    interval and p-value that cannot disagree; a card trained before it shows its Holm p.
    """
    rows = card.get("heldout", {}).get("cross_encoder_alone" if alone else "figures", [])
    columns = ["Strategy", "Metric", "Base", "Reranked", "Change", "CI low", "CI high", "p (adjusted)",
               "Verdict", "Queries improved", "Queries hurt"]
    out = []
    for f in rows:
        out.append({
            "Strategy": label(f["strategy"]), "Metric": f"{f['metric'].upper()}@{f['k']}",
            "Base": f["base"], "Reranked": f["reranked"], "Change": f["diff"], "CI low": f["ci_low"],
            "CI high": f["ci_high"], "p (adjusted)": f.get("p_holm", f["p_value"]),
            "Verdict": ("significant gain" if f["diff"] > 0 else "significant loss")
            if f["ci_low"] > 0 or f["ci_high"] < 0 else "not distinguishable",
            "Queries improved": f["improved"], "Queries hurt": f["hurt"],
        })
    return pd.DataFrame(out, columns=columns)


def trained_rerankers(data_dir: Path) -> list[dict[str, Any]]:
    """The cards of the rerankers trained in this data directory, newest first."""
    import json

    from searchgrade.indexes.rerank.trained import rerankers_dir

    cards = []
    for path in sorted(rerankers_dir(data_dir).glob("*/card.json")):
        try:
            cards.append(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError):
            continue
    return sorted(cards, key=lambda c: c.get("created_at", ""), reverse=True)


# ---------------------------------------------------------------- before a run: does the model load?

#: What the Evaluate page offers as the fix when the reranker model cannot load (its own field,
#: not the command line's --reranker-model).
PAGE_FIX = ("type a local cross-encoder folder, or trained:NAME, as \"Reranker model\" under Models and "
            "indexes")
#: model (and data directory, for trained:NAME) -> why it cannot load ("" : it loads). Checked once
#: per process: loading is what a run does first, and a model that loads stays loaded for it.
_LOADS: dict[tuple[str, str], str] = {}


def reranker_problem(model: str, data_dir: str | Path,
                     declared: Mapping[str, Any] | None = None) -> str | None:
    """Why the reranker ``model`` cannot load on this server, phrased for the Evaluate page (None:
    it loads). Checked once per model and process. A reranker the strategies file declares
    (``[reranker.NAME]``, ``declared``) is a service the run calls, not a model to load: None.

    A hub name that is neither a local folder nor in the local model cache, with the hub out of
    reach, fails without importing the model libraries (seconds saved on every first view offline).
    """
    model = model.strip()
    if model in (declared or {}):
        return None
    key = (model, str(data_dir) if model.startswith("trained:") else "")
    if key not in _LOADS:
        _LOADS[key] = _load_problem(model, Path(data_dir))
    return _LOADS[key] or None


def _load_problem(model: str, data_dir: Path) -> str:
    from searchgrade.indexes.rerank.cross_encoder import RERANKER_FIX, load_reranker
    from searchgrade.indexes.rerank.trained import TrainedReranker, trained_name

    if not model:
        return f"no reranker model is given; {PAGE_FIX}"
    try:
        trained = trained_name(model)
        if trained is not None:
            TrainedReranker.load(data_dir, trained)
            return ""
        if not _maybe_local(model):
            return (f"reranker model '{model}' could not be loaded (it is not in this server's model "
                    f"cache and the model hub is out of reach); {PAGE_FIX}")
        load_reranker(model)
    except SearchGradeError as exc:
        return str(exc).removesuffix(f": {RERANKER_FIX}") + f"; {PAGE_FIX}"
    return ""


def _maybe_local(model: str) -> bool:
    """False only when ``model`` is surely unloadable: no such folder, not in the local Hugging Face
    cache, and the hub does not answer."""
    from searchgrade.indexes.hub import hub_reachable

    if Path(model).expanduser().exists() or model.startswith((".", "/", "~")):
        return True
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return True
    if isinstance(try_to_load_from_cache(model, "config.json"), str):
        return True
    return hub_reachable()


def page_fix(message: str) -> str:
    """A skip reason as the Evaluate page words it: its own field as the fix, not a CLI flag."""
    from searchgrade.indexes.rerank.cross_encoder import RERANKER_FIX

    return message.replace(RERANKER_FIX, PAGE_FIX)


def reranked(names: list[str] | tuple[str, ...], declared: dict[str, dict[str, Any]],
             rerankers: dict[str, dict[str, Any]] | None = None) -> list[str]:
    """The strategies among ``names`` that need the run's reranker model (``X_rerank``; not
    ``X_NAME`` of a declared reranker, which calls its own service)."""
    registry = registry_for_declared(declared, rerankers)
    return [n for n in names if n in registry.infos and registry.info(n).reranks is not None
            and registry.info(n).reranker is None]
