"""A tolerant parser for real `llms.txt` files and their `llms-full` / `llms-ctx` forms.

The spec (llmstxt.org) asks for an H1 title, a `>` summary, free details, then H2 sections of
`- [title](url): description` lists. Real files stray from it: descriptions wrap onto continuation lines,
prose sits between links, sections nest, URLs are relative or angle-bracketed, and "full"/"ctx" files inline
whole pages. The parser keeps every link it can find and never raises on odd input; a file with neither links
nor inline pages comes back `is_empty` for the caller to refuse.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field
from urllib.parse import urljoin

__all__ = ["DocLink", "InlinePage", "LlmsTxt", "parse_llms_txt"]


@dataclass(frozen=True)
class DocLink:
    """One documentation page listed by an llms.txt; `section` is the heading path joined with " > "."""

    title: str
    url: str
    description: str = ""
    section: str = ""
    optional: bool = False


@dataclass(frozen=True)
class InlinePage:
    """A whole page inlined by an llms-full / llms-ctx file; `url` is None when the file does not say."""

    title: str
    url: str | None
    section: str
    text: str


@dataclass
class LlmsTxt:
    title: str = ""
    summary: str = ""
    details: str = ""
    links: list[DocLink] = field(default_factory=list)
    pages: list[InlinePage] = field(default_factory=list)

    @property
    def is_empty(self) -> bool:
        """True when there is nothing to index: no links and no inline pages."""
        return not self.links and not self.pages


_HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*))?$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_LIST_ITEM = re.compile(r"^([ \t]*)(?:[-*+]|\d{1,9}[.)])[ \t]+(.*)$")
_REF_DEF = re.compile(r"^ {0,3}\[([^\]]+)\]:[ \t]*<?([^\s>]+)>?(?:[ \t]+.*)?$")
_DESTINATION = re.compile(  # (url), (<url>), (url "title"); one level of parentheses inside a bare url
    r"\([ \t]*(?:<([^<>\n]*)>|((?:[^\s()]|\([^\s()]*\))*))"
    r"""(?:[ \t]+(?:"[^"]*"|'[^']*'|\([^)]*\)))?[ \t]*\)"""
)
_BRACKET_SPECIAL = re.compile(r"[\[\]`\\]")
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):")
_BACKTICKS = re.compile(r"`+")
_EMPHASIS = re.compile(r"\*\*|__|`")
_SPACES = re.compile(r"\s+")
_SEPARATOR = re.compile(r"^[\s:\-–—|,]+")
_WEB_SCHEMES = {"http", "https"}
_DOC_OPEN = re.compile(r"<doc\b((?:[^<>\"']|\"[^<>\"]*\"|'[^<>']*')*)>")  # stops at any "<": linear
_ATTR = re.compile(r"(?<![\w-])([\w-]+)\s*=\s*(?:\"([^\"]*)\"|'([^']*)')")
_WRAPPER_TAG = re.compile(r"<(/?)([A-Za-z][\w-]*)(\s[^<>]*)?>")
_PREAMBLE = re.compile(r"""^\{['"]title['"]:\s*(['"])(.*?)\1,\s*['"]url['"]:\s*(['"])(.*?)\3""", re.M)
_SOURCE_LINE = re.compile(r"^\s*(?:source|url|source_url|link)\s*:\s*<?(\S+?)>?\s*$", re.I)


def parse_llms_txt(text: str, base_url: str | None = None) -> LlmsTxt:
    """Parse any llms.txt variant; relative URLs resolve against `base_url` (the file's own URL)."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").lstrip("\ufeff")
    if "</doc>" in text and _DOC_OPEN.search(text) and (text.lstrip()[:1] in "<{" or "<project" in text):
        return _parse_ctx(text, base_url)
    lines = text.split("\n")
    if _looks_full(lines):
        return _parse_full(lines, base_url)
    return _parse_index(lines, base_url)


# --- inline markdown -----------------------------------------------------------------------------------


@dataclass
class _RawLink:
    title: str
    url: str
    start: int
    end: int


def _bracket_pairs(s: str) -> dict[int, int]:
    """Each `[` -> its matching `]`, skipping escapes and code spans: one pass with a stack (no rescans)."""
    closer_end: dict[int, int] = {}
    next_by_length: dict[int, int] = {}
    for run in reversed(list(_BACKTICKS.finditer(s))):
        closer_end[run.start()] = next_by_length.get(len(run.group()), -1)
        next_by_length[len(run.group())] = run.end()
    pairs: dict[int, int] = {}
    stack: list[int] = []
    i = 0
    while (special := _BRACKET_SPECIAL.search(s, i)) is not None:
        i, c = special.start(), special.group()
        if c == "\\":
            i += 2
        elif c == "`":
            end = closer_end.get(i, -1)
            opener = _BACKTICKS.match(s, i)
            i = end if end > 0 else opener.end() if opener else i + 1
        else:
            if c == "[":
                stack.append(i)
            elif stack:
                pairs[stack.pop()] = i
            i += 1
    return pairs


def _find_links(s: str, refs: dict[str, str], images: bool = False) -> list[_RawLink]:
    """Inline `[t](u)`, `[t](<u>)` and reference `[t][r]` links in one line, left to right; images only
    when asked (their `start` is then at the `!`); code spans are skipped."""
    if "[" not in s:
        return []
    pairs = _bracket_pairs(s)
    found: list[_RawLink] = []
    last = 0
    for i in sorted(pairs):
        image = i > 0 and s[i - 1] == "!"
        if i < last or (image and not images):
            continue
        close = pairs[i]
        label, after, start = s[i + 1 : close], close + 1, i - 1 if image else i
        dest = _DESTINATION.match(s, after)
        if dest is not None:
            found.append(_RawLink(label, (dest.group(1) or dest.group(2) or "").strip(), start, dest.end()))
            last = dest.end()
            continue
        ref_close = pairs.get(after, -1)
        key = (s[after + 1 : ref_close] if ref_close > 0 else "") or label
        if key.strip().lower() in refs:
            last = ref_close + 1 if ref_close > 0 else after
            found.append(_RawLink(label, refs[key.strip().lower()], start, last))
    return found


def _plain(s: str, refs: dict[str, str] | None = None) -> str:
    """Markdown inline text flattened for display: links and images become their text."""
    out, last = [], 0
    for link in _find_links(s, refs or {}, images=True):
        out += [s[last : link.start], _plain(link.title)]
        last = link.end
    flat = _EMPHASIS.sub("", "".join([*out, s[last:]]))
    return _SPACES.sub(" ", html.unescape(flat) if "&" in flat else flat).strip()


def _resolve(url: str, base_url: str | None) -> str | None:
    url = html.unescape(url).strip().replace(" ", "%20")
    if not url:
        return None
    try:
        resolved = urljoin(base_url, url) if base_url else url
    except ValueError:  # e.g. "http://[::1" (an unclosed IPv6 host)
        return None
    scheme = _SCHEME.match(resolved)
    return resolved if scheme is None or scheme.group(1).lower() in _WEB_SCHEMES else None


# --- index form ----------------------------------------------------------------------------------------


@dataclass
class _Pending:
    title: str
    url: str
    description: str
    section: str
    optional: bool


class _IndexBuilder:
    """Collects links in reading order, merging duplicates (the first keeps its place)."""

    def __init__(self, base_url: str | None, refs: dict[str, str]) -> None:
        self.base_url, self.refs = base_url, refs
        self.by_url: dict[str, _Pending] = {}
        self.item: list[_Pending] = []

    def start(self, content: str, section: str, optional: bool) -> None:
        """A list item or paragraph begins: its links become the ones continuation lines describe."""
        self.item = self._add(content, section, optional)

    def extend(self, content: str, section: str, optional: bool) -> None:
        """A continuation line: more description for the current item, and maybe more links."""
        extra = _plain(content, self.refs)
        for pending in self.item:
            pending.description = f"{pending.description} {extra}".strip()
        self._add(content, section, optional)

    def _add(self, content: str, section: str, optional: bool) -> list[_Pending]:
        added: list[_Pending] = []
        for n, raw in enumerate(_find_links(content, self.refs)):
            url = _resolve(raw.url, self.base_url)
            if url is None:
                continue
            if n == 0 and not content[: raw.start].strip(" \t*_"):
                desc = _SEPARATOR.sub("", _plain(content[raw.end :], self.refs))
            else:
                desc = _plain(content, self.refs)
            pending = self.by_url.setdefault(
                url, _Pending(_plain(raw.title) or url, url, "", section, optional)
            )
            pending.description = pending.description or desc
            added.append(pending)
        return added

    def links(self) -> list[DocLink]:
        return [DocLink(p.title, p.url, p.description, p.section, p.optional) for p in self.by_url.values()]


def _collect_refs(lines: list[str]) -> dict[str, str]:
    refs: dict[str, str] = {}
    for line in lines:
        m = _REF_DEF.match(line)
        if m:
            refs.setdefault(m.group(1).strip().lower(), m.group(2))
    return refs


def _heading_text(raw: str) -> str:
    """ATX heading text without its optional closing `#`s."""
    text = raw.strip()
    bare = text.rstrip("#")
    return bare.rstrip() if bare != text and (not bare or bare[-1] in " \t") else text


def _fenced(lines: list[str]) -> list[bool]:
    """For each line, whether it is a code fence or inside one (no headings or links there)."""
    mask, fence = [], ""
    for line in lines:
        m = _FENCE.match(line)
        if fence:
            mask.append(True)
            fence = "" if line.strip().startswith(fence) else fence
        else:
            mask.append(m is not None)
            fence = m.group(1)[0] * 3 if m else ""
    return mask


def _parse_index(lines: list[str], base_url: str | None) -> LlmsTxt:
    refs = _collect_refs(lines)
    doc = LlmsTxt()
    builder = _IndexBuilder(base_url, refs)
    stack: list[tuple[int, str]] = []
    summary: list[str] = []
    details: list[str] = []
    in_item = blank_before = False
    for line, fenced in zip(lines, _fenced(lines), strict=True):
        if fenced:
            if not stack and doc.title:
                details.append(line)
            in_item = False
            continue
        heading = _HEADING.match(line)
        if heading:
            level, text = len(heading.group(1)), _plain(_heading_text(heading.group(2) or ""))
            if level == 1 and not doc.title and not stack:
                doc.title = text
            else:
                while stack and stack[-1][0] >= level:
                    stack.pop()
                stack.append((level, text))
                parents = " > ".join(t for _, t in stack[:-1])
                builder.start(
                    _heading_text(heading.group(2) or ""),
                    parents,
                    any(t.lower() == "optional" for _, t in stack),
                )
            in_item = False
            continue
        section = " > ".join(t for _, t in stack)
        optional = any(t.lower() == "optional" for _, t in stack)
        stripped = line.strip()
        if not stripped:
            blank_before = True
            if not stack and doc.title and (details or summary):
                details.append("")
            continue
        if stripped.startswith(">") and not stack and not details:
            summary.append(stripped.lstrip(">").strip())
            continue
        if not stack:
            details.append(line.rstrip())
        item = _LIST_ITEM.match(line)
        if _REF_DEF.match(line):
            continue
        if item and not (in_item and item.group(1) and not _find_links(item.group(2), refs)):
            builder.start(item.group(2), section, optional)
            in_item = True
        elif in_item and (item or not blank_before or line[:2].isspace()):
            builder.extend(item.group(2) if item else stripped, section, optional)
        else:
            builder.start(stripped, section, optional)
            in_item = bool(builder.item)
        blank_before = False
    doc.summary = " ".join(s for s in summary if s)
    doc.details = "\n".join(details).strip()
    doc.links = builder.links()
    return doc


# --- llms-ctx form: <project><section><doc title=... desc=...>page</doc></section></project> -------------


def _attrs(raw: str) -> dict[str, str]:
    return {m.group(1).lower(): html.unescape(m.group(2) or m.group(3) or "") for m in _ATTR.finditer(raw)}


def _preamble_urls(text: str) -> dict[str, str]:
    """`{'title': ..., 'url': ...}` lines that llms_txt2ctx prints before the XML map titles to URLs."""
    head = text[: text.find("<")] if "<" in text else text
    return {m.group(2): m.group(4) for m in reversed(list(_PREAMBLE.finditer(head)))}


def _parse_ctx(text: str, base_url: str | None) -> LlmsTxt:
    doc = LlmsTxt()
    urls = _preamble_urls(text)
    project = re.search(r"<project\b([^>]*)>", text)
    if project:
        attrs = _attrs(project.group(1))
        doc.title, doc.summary = attrs.get("title", ""), attrs.get("summary", "")
        first = _DOC_OPEN.search(text, project.end())
        head = text[project.end() : first.start() if first else len(text)]
        doc.details = _WRAPPER_TAG.sub("", head).strip()
    open_sections: list[str] = []
    descriptions: list[str] = []
    pos = 0
    while (m := _DOC_OPEN.search(text, pos)) is not None and (close := text.find("</doc>", m.end())) >= 0:
        for tag in _WRAPPER_TAG.finditer(text, pos, m.start()):
            name = tag.group(2).lower()
            if name in {"project", "doc"}:
                continue
            if tag.group(1):
                while name in open_sections and open_sections.pop() != name:
                    pass
            elif tag.group(3) is None:
                open_sections.append(name)
        pos = close + len("</doc>")
        attrs = _attrs(m.group(1))
        title = attrs.get("title", "")
        raw_url = attrs.get("url") or attrs.get("src") or attrs.get("href") or urls.get(title, "")
        url = _resolve(raw_url, base_url) if raw_url else None
        section = open_sections[-1] if open_sections else ""
        doc.pages.append(InlinePage(title, url, section, text[m.end() : close].strip()))
        descriptions.append(attrs.get("desc", ""))
    doc.links = _page_links(doc.pages, descriptions)
    return doc


def _page_links(pages: list[InlinePage], descriptions: list[str]) -> list[DocLink]:
    """One link per inlined page whose URL is known, so full/ctx files are searchable like an index."""
    links: dict[str, DocLink] = {}
    for page, desc in zip(pages, descriptions, strict=True):
        if page.url is not None and page.url not in links:
            optional = page.section.lower() == "optional"
            links[page.url] = DocLink(page.title or page.url, page.url, desc, page.section, optional)
    return list(links.values())


# --- llms-full form: one "# Title" block per page, with `Source: url` lines or `url:` front matter ------


def _h1_lines(lines: list[str]) -> list[int]:
    return [
        n
        for n, (x, fenced) in enumerate(zip(lines, _fenced(lines), strict=True))
        if not fenced and x[:2] == "# "
    ]


def _looks_full(lines: list[str]) -> bool:
    """Several H1s, and either page URLs or mostly prose, mean inlined pages rather than an index."""
    h1s = _h1_lines(lines)
    if len(h1s) < 2:
        return False
    sourced = sum(any(_SOURCE_LINE.match(x) for x in lines[n + 1 : n + 6]) for n in h1s)
    if sourced >= 2 or any(re.match(r"^url:\s*\S", x) for x in lines[:20]):
        return True
    content = [x for x in lines if x.strip()]
    listed = sum(bool(_LIST_ITEM.match(x) and "](" in x) for x in content)
    return listed < 0.3 * len(content)


def _front_matter(lines: list[str], end: int) -> tuple[int, dict[str, str]]:
    """`---` / `key: value` / `---` right before line `end`: its first line and its fields."""
    n = end - 1
    while n >= 0 and not lines[n].strip():
        n -= 1
    if n < 1 or lines[n].strip() != "---":
        return end, {}
    start = n - 1
    while start >= 0 and lines[start].strip() != "---" and n - start < 30:
        start -= 1
    body = lines[start + 1 : n]
    if start < 0 or not body or not all(re.match(r"^[\w-]+:\s", x) or not x.strip() for x in body):
        return end, {}
    fields = {}
    for x in body:
        key, _, value = x.partition(":")
        fields[key.strip().lower()] = value.strip().strip("\"'")
    return start, fields


def _parse_full(lines: list[str], base_url: str | None) -> LlmsTxt:
    doc = LlmsTxt()
    h1s = _h1_lines(lines)
    bounds = [_front_matter(lines, n) for n in h1s]
    descriptions: list[str] = []
    for i, n in enumerate(h1s):
        title = _plain(_heading_text(lines[n][2:]))
        fields = bounds[i][1]
        end = bounds[i + 1][0] if i + 1 < len(h1s) else len(lines)
        body = lines[n + 1 : end]
        raw_url = fields.get("url") or fields.get("source") or ""
        for k, line in enumerate(body[:6]):
            m = _SOURCE_LINE.match(line)
            if m and not raw_url:
                raw_url = m.group(1)
                del body[k]
                break
        if i == 0:
            first = next((x.strip() for x in body if x.strip()), "")
            doc.title, doc.summary = title, first.lstrip("> ").strip() if first.startswith(">") else ""
        url = _resolve(raw_url, base_url) if raw_url else None
        doc.pages.append(InlinePage(title, url, "", "\n".join(body).strip()))
        descriptions.append(fields.get("description", ""))
    doc.links = _page_links(doc.pages, descriptions)
    return doc
