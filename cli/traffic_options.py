"""`evaluate`'s options for a query set sampled from a log and for grading by clicks (checked with
the rest of the run's request: engine/run/request.py)."""

from __future__ import annotations

import argparse

from searchgrade.engine.run.request import DEFAULT_CLICK_MODEL


def add_traffic_options(p: argparse.ArgumentParser) -> None:
    from searchgrade.engine.clicks.grading import MIN_EXAMINATIONS
    from searchgrade.engine.clicks.models import CLICK_MODELS, MODEL_LABELS

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
                   help=f"with --clicks: pairs examined fewer times stay unjudged (default: {MIN_EXAMINATIONS}; "
                   "for pbm an impression counts as the examination of its position, as the log's position "
                   "bias says)")
