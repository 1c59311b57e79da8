"""Fusing ranked lists from keyword and vector search: pure functions, one formula each."""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from typing import Literal

Norm = Literal["minmax", "zscore", "none"]


def _sorted(scores: dict[Hashable, float], first_seen: dict[Hashable, int]) -> list[tuple[Hashable, float]]:
    return sorted(scores.items(), key=lambda item: (-item[1], first_seen[item[0]]))


def _weights(count: int, weights: Sequence[float] | None) -> Sequence[float]:
    if weights is None:
        return [1.0] * count
    if len(weights) != count:
        raise ValueError(f"{len(weights)} weights for {count} lists")
    return weights


def rrf(
    rankings: Sequence[Sequence[Hashable]], k: int = 60, weights: Sequence[float] | None = None
) -> list[tuple[Hashable, float]]:
    """Reciprocal-rank fusion: score(d) = Σ wᵢ / (k + rankᵢ(d)), ranks from 1; ties keep first appearance."""
    scores: dict[Hashable, float] = {}
    first_seen: dict[Hashable, int] = {}
    for ranking, weight in zip(rankings, _weights(len(rankings), weights), strict=True):
        for rank, item in enumerate(ranking, start=1):
            scores[item] = scores.get(item, 0.0) + weight / (k + rank)
            first_seen.setdefault(item, len(first_seen))
    return _sorted(scores, first_seen)


def normalise(scores: Sequence[float], method: Norm = "minmax") -> list[float]:
    """Scores of one list mapped to a common scale: min-max to [0, 1], or z-scores; a flat list maps to 1s."""
    if not scores or method == "none":
        return list(scores)
    if method == "minmax":
        low, high = min(scores), max(scores)
        return [1.0] * len(scores) if high == low else [(s - low) / (high - low) for s in scores]
    mean = sum(scores) / len(scores)
    spread = math.sqrt(sum((s - mean) ** 2 for s in scores) / len(scores))
    return [1.0] * len(scores) if spread == 0 else [(s - mean) / spread for s in scores]


def convex(
    scored: Sequence[Sequence[tuple[Hashable, float]]],
    weights: Sequence[float] | None = None,
    method: Norm = "minmax",
) -> list[tuple[Hashable, float]]:
    """Convex combination: Σ wᵢ · normᵢ(score); an item missing from a list gets that list's lowest value."""
    fused: dict[Hashable, float] = {}
    first_seen: dict[Hashable, int] = {}
    normalised_lists = []
    for entries in scored:
        values = normalise([score for _, score in entries], method)
        normalised_lists.append(
            (dict(zip((item for item, _ in entries), values, strict=True)), min(values, default=0.0))
        )
        for item, _ in entries:
            first_seen.setdefault(item, len(first_seen))
    for (values_by_item, floor), weight in zip(normalised_lists, _weights(len(scored), weights), strict=True):
        for item in first_seen:
            fused[item] = fused.get(item, 0.0) + weight * values_by_item.get(item, floor)
    return _sorted(fused, first_seen)
