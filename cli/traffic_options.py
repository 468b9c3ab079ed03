"""`evaluate`'s options for a query set sampled from a log and for grading by clicks."""

from __future__ import annotations

import argparse
from typing import Any

from searchgrade.core.records import SearchGradeError

#: The default click model: the one whose labels ranked systems closest to the qrels in the click
#: study (bench/RESULTS.md).
DEFAULT_CLICK_MODEL = "pbm"


def add_traffic_options(p: argparse.ArgumentParser) -> None:
    from searchgrade.engine.clicks.models import CLICK_MODELS, MIN_IMPRESSIONS, MODEL_LABELS

    g = p.add_argument_group("query logs and clicks")
    g.add_argument("--query-set", metavar="NAME",
                   help="evaluate a query set sampled from a query log (`searchgrade queries sample`), graded "
                   "with --llm or --clicks; Results adds the traffic-weighted figures and the bands")
    g.add_argument("--clicks", action="store_true",
                   help="grade with the log's clicks through a click model; with --llm too, click grades win "
                   "and the judge's agreement with them is reported")
    g.add_argument("--click-model", choices=tuple(CLICK_MODELS),
                   help=f"with --clicks (default: {DEFAULT_CLICK_MODEL}): "
                   + "; ".join(f"{name}: {MODEL_LABELS[name]}" for name in CLICK_MODELS))
    g.add_argument("--min-impressions", type=int,
                   help=f"with --clicks: pairs shown fewer times stay unjudged (default: {MIN_IMPRESSIONS})")


def traffic_fields(args: argparse.Namespace) -> dict[str, Any]:
    """RunConfig keywords of these options (the mode itself is decided with --qrels and --llm)."""
    if not args.clicks and (args.click_model is not None or args.min_impressions is not None):
        raise SearchGradeError(f"{'--click-model' if args.click_model else '--min-impressions'} goes with --clicks")
    if args.clicks and args.qrels:
        raise SearchGradeError("--clicks and --qrels are two label sources: keep one (people's ratings apply to "
                               "either)")
    fields: dict[str, Any] = {"query_set": args.query_set}
    if args.clicks:
        fields["click_model"] = args.click_model or DEFAULT_CLICK_MODEL
        if args.min_impressions is not None:
            fields["min_impressions"] = args.min_impressions
    return fields
