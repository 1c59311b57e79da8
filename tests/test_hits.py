"""Hit.to_dict: the JSON object of POST /search, MCP and `citedocs search --json`, built without `asdict`."""

from __future__ import annotations

from dataclasses import asdict

from citedocs.hits import Hit


def test_to_dict_is_asdict_in_the_same_order_with_the_text_only_when_asked() -> None:
    hit = Hit(
        "abc123", "/docs/a.md", "/docs", "Setup > Ports", 3, 10, 24, 1.25, "full text", "**port**", "link"
    )
    expected = asdict(hit)
    assert hit.to_dict(with_text=True) == expected
    assert list(hit.to_dict(with_text=True)) == list(expected)
    del expected["text"]
    assert hit.to_dict() == expected
    assert list(hit.to_dict()) == list(expected)
