from __future__ import annotations

import pytest

from citedocs.search.fusion import convex, normalise, rrf


def test_rrf_exact_scores_k60() -> None:
    fused = rrf([["a", "b", "c"], ["b", "c", "d"]])
    assert [item for item, _ in fused] == ["b", "c", "a", "d"]
    scores = dict(fused)
    assert scores["b"] == pytest.approx(1 / 62 + 1 / 61)
    assert scores["c"] == pytest.approx(1 / 63 + 1 / 62)
    assert scores["a"] == pytest.approx(1 / 61)
    assert scores["d"] == pytest.approx(1 / 63)


def test_rrf_ties_keep_first_appearance() -> None:
    fused = rrf([["x", "y"], ["y", "x"]], k=1)
    assert fused[0][1] == fused[1][1]
    assert [item for item, _ in fused] == ["x", "y"]


def test_rrf_weights_shift_the_winner() -> None:
    keyword, semantic = ["k1", "s1"], ["s1", "k1"]
    assert rrf([keyword, semantic], k=1, weights=[2.0, 1.0])[0][0] == "k1"
    assert rrf([keyword, semantic], k=1, weights=[1.0, 2.0])[0][0] == "s1"
    assert dict(rrf([keyword, semantic], k=1, weights=[0.0, 1.0]))["k1"] == pytest.approx(1 / 3)


def test_rrf_empty_inputs() -> None:
    assert rrf([]) == []
    assert rrf([[], []]) == []
    assert rrf([["a"], []]) == [("a", pytest.approx(1 / 61))]


def test_rrf_rejects_wrong_weight_count() -> None:
    with pytest.raises(ValueError, match="2 weights for 1 lists"):
        rrf([["a"]], weights=[1.0, 2.0])


def test_normalise_minmax_zscore_and_flat() -> None:
    assert normalise([2.0, 4.0, 6.0]) == [0.0, 0.5, 1.0]
    assert normalise([3.0, 3.0]) == [1.0, 1.0]
    z = normalise([1.0, 2.0, 3.0], "zscore")
    assert z == pytest.approx([-1.224744871, 0.0, 1.224744871])
    assert normalise([], "zscore") == []
    assert normalise([5.0, 1.0], "none") == [5.0, 1.0]


def test_convex_minmax_exact() -> None:
    keyword = [("a", 10.0), ("b", 5.0), ("c", 0.0)]
    semantic = [("c", 0.9), ("b", 0.8), ("d", 0.5)]
    fused = dict(convex([keyword, semantic], weights=[0.5, 0.5]))
    assert fused["a"] == pytest.approx(0.5 * 1.0 + 0.5 * 0.0)
    assert fused["b"] == pytest.approx(0.5 * 0.5 + 0.5 * 0.75)
    assert fused["c"] == pytest.approx(0.5 * 0.0 + 0.5 * 1.0)
    assert fused["d"] == pytest.approx(0.0)
    assert [item for item, _ in convex([keyword, semantic], weights=[0.5, 0.5])] == ["b", "a", "c", "d"]


def test_convex_missing_item_gets_list_floor_in_zscore() -> None:
    fused = dict(convex([[("a", 1.0), ("b", 3.0)], [("c", 2.0)]], method="zscore"))
    assert fused["a"] == pytest.approx(-1.0 + 1.0)
    assert fused["c"] == pytest.approx(-1.0 + 1.0)
    assert fused["b"] == pytest.approx(1.0 + 1.0)


def test_convex_empty_lists() -> None:
    assert convex([]) == []
    assert convex([[], [("a", 1.0)]]) == [("a", 1.0)]
