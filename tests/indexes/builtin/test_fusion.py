from __future__ import annotations

import pytest

from searchgrade.core.records import ScoredDoc, SearchGradeError
from searchgrade.indexes.builtin.fusion import METHODS, fuse, normalise, parse_fusion
from searchgrade.indexes.builtin.hybrid import HybridNode


def test_every_canonical_text_parses_back_to_the_same_fusion():
    for text in ("rrf", "wrrf(w=0.7)", "combsum(norm=zscore)", "combmnz(norm=sum,depth=5:50)",
                 "convex(w=0.3,norm=minmax)", "rrf(k=10,depth=20)"):
        fusion = parse_fusion(text)
        assert parse_fusion(fusion.text()) == fusion


def test_minmax_of_equal_scores_is_zero_not_a_division_by_zero():
    assert normalise([2.0, 2.0], "minmax") == [0.0, 0.0]
    assert normalise([3.0, 1.0, 2.0], "minmax") == [1.0, 0.0, 0.5]
    # sum: (s - min) / (sum - n * min): 3,1,2 -> 2/3, 0, 1/3
    assert normalise([3.0, 1.0, 2.0], "sum") == pytest.approx([2 / 3, 0.0, 1 / 3])


def test_convex_weight_one_is_the_first_list_alone():
    a = [ScoredDoc("x", 0.9, 1), ScoredDoc("y", 0.1, 2)]
    b = [ScoredDoc("y", 30.0, 1), ScoredDoc("z", 10.0, 2)]
    fused = fuse([a, b], parse_fusion("convex(w=1,norm=minmax)"))
    assert [d.doc_id for d in fused][:1] == ["x"]
    assert {d.doc_id: d.score for d in fused} == {"x": 1.0, "y": 0.0, "z": 0.0}


@pytest.mark.parametrize(("text", "words"), [
    ("borda", "unknown method 'borda'"),
    ("rrf(norm=minmax)", "fuses ranks, not scores"),
    ("combsum(norm=l2)", "norm 'l2' is not known"),
    ("convex(w=x)", "w='x' is not a number"),
    ("combsum(depth=0)", "depth must be whole numbers >= 1"),
    ("rrf(alpha=1)", "is not a parameter"),
])
def test_a_wrong_fusion_is_one_line_naming_the_part(text, words):
    with pytest.raises(SearchGradeError, match=words) as info:
        parse_fusion(text)
    assert "\n" not in str(info.value)


def test_a_hybrid_node_with_three_depths_for_two_lists_stops_when_built():
    with pytest.raises(SearchGradeError, match="3 depths for 2 lists"):
        HybridNode(("ann", "fulltext"), fusion=parse_fusion("combsum(depth=1:2:3)"))


def test_methods_listed_in_the_module_all_fuse():
    a = [ScoredDoc("x", 0.9, 1), ScoredDoc("y", 0.8, 2), ScoredDoc("w", 0.1, 3)]
    b = [ScoredDoc("y", 3.0, 1), ScoredDoc("z", 1.0, 2)]
    for method in METHODS:
        assert fuse([a, b], parse_fusion(method))[0].doc_id == "y"
