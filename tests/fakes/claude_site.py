"""A real documentation site on loopback: the 45 docs.claude.com pages of ../shared/data/claude-docs-qa, each
served at its own path (from the page's `<!-- source: URL -->` line) with an llms.txt that lists them by
title, as docs sites publish it (title-only links, no descriptions: the hard case for ranking links)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from fakes.docs_site import DocsSite

_SOURCE = re.compile(r"<!--\s*source:\s*(\S+)\s*-->")
_H1 = re.compile(r"^#\s+(.+)$", re.M)


@dataclass(frozen=True)
class ClaudeCase:
    id: str
    question: str
    urls: frozenset[str]  # the pages the answer lives in


def write_claude_site(site: DocsSite, data: Path) -> tuple[str, dict[str, str]]:
    """Write llms.txt and the pages into `site`; returns the llms.txt URL and {docs file name: page URL}."""
    urls: dict[str, str] = {}
    lines = ["# Claude Docs", "", "> Claude API and developer platform documentation.", "", "## Docs", ""]
    for path in sorted((data / "docs").glob("*.md")):
        text = path.read_text(encoding="utf-8")
        source = _SOURCE.search(text)
        rel = (urlsplit(source.group(1)).path if source else "/" + path.stem).strip("/") + ".md"
        url = site.write(rel, text)
        heading = _H1.search(text)
        lines.append(f"- [{heading.group(1).strip() if heading else path.stem}]({url})")
        urls[path.name] = url
    return site.write("llms.txt", "\n".join(lines) + "\n"), urls


def claude_cases(data: Path, urls: dict[str, str]) -> list[ClaudeCase]:
    cases = []
    for line in (data / "cases.jsonl").read_text(encoding="utf-8").splitlines():
        case = json.loads(line)
        pages = frozenset(urls[e["file"].rsplit("/", 1)[-1]] for e in case["evidence"])
        cases.append(ClaudeCase(case["id"], case["question"], pages))
    return cases
