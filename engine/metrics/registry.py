"""Every metric, declared once, in display order (the primary metric, DCG, first).

Each ``Metric`` record (engine/metrics/record.py) holds the metric's function and its array twin,
its direction, range, label scales, definition, ir_measures name and parameters; everything else
(``METRICS``, the pickers, the labels, the glossary, the verdict words, the exported columns, the
MCP fields) is read from these records. A new metric is one module with its function, one array
function in arrays.py (or arrays_holes.py) and one record here.
"""

from __future__ import annotations

import searchgrade.engine.metrics.arrays as arrays
import searchgrade.engine.metrics.arrays_holes as arrays_holes
from searchgrade.engine.metrics.average_precision import average_precision
from searchgrade.engine.metrics.bpref import bpref
from searchgrade.engine.metrics.dcg import dcg
from searchgrade.engine.metrics.err import err
from searchgrade.engine.metrics.infap import infap
from searchgrade.engine.metrics.judged import judged
from searchgrade.engine.metrics.ndcg import ndcg
from searchgrade.engine.metrics.ndcg_judged import ndcg_judged
from searchgrade.engine.metrics.precision import precision
from searchgrade.engine.metrics.r_precision import r_precision
from searchgrade.engine.metrics.rbp import rbp, rbp_residual
from searchgrade.engine.metrics.recall import recall, recall_single_hit
from searchgrade.engine.metrics.reciprocal_rank import reciprocal_rank
from searchgrade.engine.metrics.record import GRADED, IDEAL, TOP_GRADE, Metric
from searchgrade.engine.metrics.relevance import (
    mean_relevance,
    pct_highly_relevant,
    pct_not_relevant,
    pct_relevant,
)

#: Metric key of "source found@k": 1 if the query's source document is in the top k (generated
#: queries only; computed from the source document, not from grades: engine/run/scoring.py).
SOURCE_FOUND = "source_found"

RECORDS: tuple[Metric, ...] = (
    Metric("dcg", "DCG", "Discounted cumulative gain: each of the top k's grades divided by log2(rank + 1), "
           "summed. It rewards both how useful the results are and how high they rank, and tells two good "
           "results from five.", dcg, arrays.dcg, high=IDEAL),
    Metric("ndcg", "NDCG", "DCG@k divided by the query's ideal DCG@k, the best ordering of every grade known "
           "for it: how close the ranking comes to the best one possible.", ndcg, arrays.ndcg,
           maximum="1: the known grades in their ideal order", ir_measures="nDCG@{k}", params=("judged_only",)),
    Metric("precision", "Precision", "The share of the k places holding a relevant result (grade at or above "
           "the run's threshold); a place left empty counts as not relevant.", precision, arrays.precision,
           maximum="1: every one of the {k} places relevant", ir_measures="P(rel={rel})@{k}", params=("rel",)),
    Metric("recall", "Recall", "The share of the query's known relevant documents that are in the top k.",
           recall, arrays.recall, maximum="1: every known relevant document in the top {k}",
           ir_measures="R(rel={rel})@{k}", params=("rel",)),
    Metric("recall_single_hit", "Recall (single hit)", "1 when at least one relevant document is in the top k, "
           "else 0: its mean is the share of queries that found something relevant.", recall_single_hit,
           arrays.recall_single_hit, maximum="1: a relevant result in every query's top {k}",
           ir_measures="Success(rel={rel})@{k}", params=("rel",)),
    Metric("mrr", "MRR", "Mean reciprocal rank: 1 / the rank of the first relevant result in the top k, 0 when "
           "there is none.", reciprocal_rank, arrays.reciprocal_rank, maximum="1: the first result relevant",
           ir_measures="RR(rel={rel})@{k}", params=("rel",)),
    Metric("map", "MAP", "Mean average precision: the precision at each rank holding a relevant result, summed "
           "and divided by the number of relevant documents known for the query.", average_precision,
           arrays.average_precision, maximum="1: every known relevant document ranked first",
           ir_measures="AP(rel={rel})@{k}", params=("rel",)),
    Metric("mean_relevance", "Mean relevance", "The grades of the top k summed and divided by k: a place left "
           "empty counts 0, so a short list is never rewarded.", mean_relevance, arrays.mean_relevance,
           high=TOP_GRADE, maximum="every one of the {k} places holding a result of the top grade",
           over_places=True),
    Metric("judged", "Judged share", "The share of the k places holding a result with a grade (from qrels, "
           "people or the judge). Every other figure counts an unjudged result as not relevant, so a low share "
           "makes them lower bounds.", judged, arrays.judged, maximum="1: every one of the {k} places judged",
           ir_measures="Judged@{k}", diagnostic=True, unjudged=True),
    Metric("pct_highly_relevant", "Share highly relevant", "The share of the k places holding a result of grade "
           "3 (dedicated to the query); a place left empty counts as not.", pct_highly_relevant,
           arrays.pct_highly_relevant, maximum="1: every one of the {k} places of grade 3", scales=(GRADED,),
           top_grade=3, percent=True, over_places=True),
    Metric("pct_relevant", "Share relevant", "The share of the k places holding a relevant result (grade at or "
           "above the run's threshold): Precision@k's figure, a failed judgment's place left out.", pct_relevant,
           arrays.pct_relevant, maximum="1: every one of the {k} places relevant", params=("rel",), percent=True,
           over_places=True),
    Metric("pct_not_relevant", "Share not relevant", "The share of the k places without a relevant result (a "
           "place left empty counts as not relevant): one minus the share relevant.", pct_not_relevant,
           arrays.pct_not_relevant, higher_is_better=False, maximum="1: no place relevant", params=("rel",),
           percent=True, over_places=True),
    # For incomplete judgments (docs/metrics.md): they read holes (no grade, or a negative one).
    Metric("bpref", "bpref", "Binary preference: for each relevant result, one minus the share of judged "
           "non-relevant documents ranked above it, over the relevant documents known. Unjudged results are "
           "skipped, not counted against the strategy.", bpref, arrays_holes.bpref,
           maximum="1: every relevant document above every judged non-relevant one",
           ir_measures="Bpref(rel={rel})", params=("rel",), unjudged=True, whole_list=True, holes=True),
    Metric("ndcg_judged", "NDCG, judged only", "NDCG@k of the condensed list: the unjudged results removed and "
           "the judged ones moved up before the cut, so an unjudged result neither costs nor earns.", ndcg_judged,
           arrays.ndcg_judged, maximum="1: the judged results in their ideal order",
           ir_measures="nDCG(judged_only=True)@{k}", params=("judged_only",), unjudged=True, holes=True),
    Metric("err", "ERR", "Expected reciprocal rank: a reader stops at a result of grade g with probability "
           "(2^g - 1) / 2^(top grade); ERR is the expected 1 / rank at which they stop.", err, arrays_holes.err,
           maximum="never reached: even a first result of the top grade leaves some readers looking on",
           scales=(GRADED,), ir_measures="ERR@{k}", holes=True, grade_scale=True),
    Metric("rbp", "RBP", "Rank-biased precision: a reader moves on to the next result with probability p "
           "(0.8); RBP is (1 - p) times the sum of p^(rank - 1) over the relevant results.", rbp,
           arrays_holes.rbp, maximum="at most 1 - p^k, every result relevant down to the cut",
           ir_measures="RBP(rel={rel},p={p})", params=("p", "rel"), whole_list=True, holes=True),
    Metric("rbp_residual", "RBP residual", "How much RBP could still rise were every unjudged result relevant: "
           "RBP and RBP + residual bound the true value.", rbp_residual, arrays_holes.rbp_residual,
           higher_is_better=False, maximum="1: nothing judged", params=("p", "rel"), diagnostic=True,
           unjudged=True, whole_list=True, holes=True),
    Metric("infap", "infAP", "Inferred average precision, for qrels that judged a sample of the pool: average "
           "precision estimated from the judged sample.", infap, arrays_holes.infap,
           maximum="1: every relevant document ranked first", ir_measures="infAP(rel={rel})", params=("rel",),
           unjudged=True, whole_list=True, holes=True, needs_sampling=True),
    Metric("r_precision", "R-precision", "Precision at R, the number of relevant documents known for the query: "
           "the share of the top R results that are relevant.", r_precision, arrays_holes.r_precision,
           maximum="1: the top R all relevant", ir_measures="Rprec(rel={rel})", params=("rel",), whole_list=True,
           holes=True),
    Metric(SOURCE_FOUND, "Source found", "1 when the document a generated query was written from is in the top "
           "k, else 0: a check that needs no judge (the source is not the only relevant document).", None, None,
           maximum="1: every query's source document in the top {k}", needs_source=True),
)
