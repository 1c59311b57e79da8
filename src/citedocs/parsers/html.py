"""HTML via selectolax (lexbor): the main content only, as heading-aware text or as clean markdown.

Chrome is dropped (script, style, nav, header, footer, aside, form, svg, ARIA navigation/banner/contentinfo);
<main>, [role=main] or a single <article> is preferred over <body>. Inside that main element a <header> keeps
only its headings (an article's title) and nothing else. One walk yields blocks that both `parse_html`
(plain text, segments) and `html_to_markdown` render.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from selectolax.lexbor import LexborHTMLParser, LexborNode

from citedocs.errors import ParseError
from citedocs.parsers._build import TextBuilder, push_heading
from citedocs.parsers.base import ParsedDocument, SegmentKind
from citedocs.parsers.budget import checkpoint
from citedocs.parsers.text import decode_bytes

BlockKind = Literal["heading", "para", "item", "code", "table"]

_DROP_TAGS = frozenset(
    str.split(
        "script style noscript nav header footer aside form svg template iframe button select input "
        "textarea dialog object embed canvas audio video map head link meta"
    )
)
_DROP_ROLES = frozenset({"navigation", "banner", "contentinfo", "search", "complementary"})
_DROP_CLASSES = frozenset(
    {"headerlink", "hash-link", "mw-editsection", "mw-jump-link", "visually-hidden", "sr-only"}
)
_BLOCK_TAGS = frozenset(
    str.split(
        "address article blockquote center details dd div dl dt fieldset figcaption figure h1 h2 h3 h4 "
        "h5 h6 hgroup hr li main ol p pre section summary table ul caption tbody thead tfoot tr td th"
    )
)
_HEADINGS = {f"h{n}": n for n in range(1, 7)}
_PURE_INLINE = frozenset(
    str.split("b i em strong code kbd samp tt var sub sup abbr small mark q cite time br img wbr")
)
_BLOCK_SELECTOR = ",".join(sorted(_BLOCK_TAGS))
_WS = re.compile(r"\s+")
_ZERO_WIDTH = re.compile("[\u200b\ufeff]")
_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_\-:.]+)""", re.IGNORECASE)
_LANGUAGE = re.compile(r"(?:language|lang|highlight)-([A-Za-z0-9_+#-]+)")
# The C parser's time grows with the square of the nesting depth (200k nested <div>: over 9 minutes, past any
# budget checked between steps), and the walk below recurses per level, so a page nested deeper than this is
# refused before it is parsed. Real pages nest 20-60 deep; the walk's own recursion stops near 480.
MAX_HTML_DEPTH = 400
_TAG = re.compile(
    r"<!--.*?(?:-->|\Z)|<(script|style|textarea|title|xmp|noscript)\b[^<>]*>.*?(?:</\1\s*>|\Z)"
    r"|<(/?)([A-Za-z][A-Za-z0-9:-]*)(?:[^<>\"'/]|/(?!>)|\"[^\"]*\"|'[^']*')*(/?)>",
    re.DOTALL | re.IGNORECASE,
)
# Elements that never hold others (void) or whose end tag the parser supplies when a sibling starts.
_NOT_NESTING = frozenset(
    str.split(
        "area base br col embed hr img input link meta param source track wbr p li dt dd tr td th option "
        "optgroup rb rt rp thead tbody tfoot colgroup caption html head body"
    )
)


@dataclass(frozen=True, slots=True)
class Block:
    kind: BlockKind
    plain: str
    markdown: str
    level: int = 0  # heading level, or list depth for items


def _dropped(node: LexborNode) -> bool:
    if node.tag in _DROP_TAGS:
        return True
    attrs = node.attributes
    if attrs.get("role") in _DROP_ROLES or "hidden" in attrs:
        return True
    if "display:none" in (attrs.get("style") or "").replace(" ", ""):
        return True
    return not _DROP_CLASSES.isdisjoint((attrs.get("class") or "").split())


def _clean(text: str) -> str:
    text = _ZERO_WIDTH.sub("", text)
    lines = [" ".join(line.split()) for line in text.split("\n")]
    return "\n".join(line for line in lines if line).strip()


def _wrap(inner: str, mark: str) -> str:
    core = inner.strip()
    if not core:
        return inner
    lead = " " if inner[:1].isspace() else ""
    trail = " " if inner[-1:].isspace() else ""
    return f"{lead}{mark}{core}{mark}{trail}"


def _inline(node: LexborNode) -> tuple[str, str]:
    """(plain, markdown) of inline content."""
    plain: list[str] = []
    md: list[str] = []
    for child in node.iter(include_text=True):
        tag = child.tag or ""
        if tag == "-text":
            text = _WS.sub(" ", child.text_content or "")
            plain.append(text)
            md.append(text)
        elif tag.startswith("-") or _dropped(child):
            continue
        elif tag == "br":
            plain.append("\n")
            md.append("\n")
        elif tag == "img":
            alt = _WS.sub(" ", child.attributes.get("alt") or "").strip()
            src = child.attributes.get("src") or ""
            if alt and src and not src.startswith("data:"):
                md.append(f"![{alt}]({src})")
        else:
            inner_plain, inner_md = _inline(child)
            gap = " " if tag in _BLOCK_TAGS else ""  # list items or divs inside a table cell
            plain.append(f"{gap}{inner_plain}{gap}")
            md.append(f"{gap}{_inline_markdown(child, inner_md)}{gap}")
    return "".join(plain), "".join(md)


def _inline_markdown(node: LexborNode, inner: str) -> str:
    tag = node.tag or ""
    if tag == "a":
        href = (node.attributes.get("href") or "").strip()
        if not _ZERO_WIDTH.sub("", inner).strip() or not href or href.lower().startswith("javascript:"):
            return inner
        title = (node.attributes.get("title") or "").replace('"', "'").strip()
        suffix = f' "{title}"' if title else ""
        return f"[{inner.strip()}]({href.replace(' ', '%20')}{suffix})"
    if tag in {"code", "kbd", "samp", "tt"}:
        return _wrap(inner, "``" if "`" in inner else "`")
    if tag in {"strong", "b"}:
        return _wrap(inner, "**")
    if tag in {"em", "i"}:
        return _wrap(inner, "*")
    return inner


class _Walker:
    def __init__(self, keep_header_headings: bool) -> None:
        self.blocks: list[Block] = []
        self._keep_header_headings = keep_header_headings

    def paragraph(self, plain: str, md: str, kind: BlockKind = "para", level: int = 0) -> None:
        checkpoint()
        plain, md = _clean(plain), _clean(md)
        if plain:
            self.blocks.append(Block(kind, plain, md, level))

    def container(self, node: LexborNode, depth: int = 0) -> None:
        """Children of a block container: runs of inline content become paragraphs."""
        plain: list[str] = []
        md: list[str] = []
        for child in node.iter(include_text=True):
            checkpoint()
            tag = child.tag or ""
            is_block = tag in _BLOCK_TAGS or (
                tag not in _PURE_INLINE
                and not tag.startswith("-")
                and child.css_first(_BLOCK_SELECTOR) is not None
            )
            if tag == "header" and self._keep_header_headings:
                self._flush(plain, md)
                for heading in child.css("h1, h2, h3, h4, h5, h6"):
                    self.block(heading, depth)
            elif tag == "-text":
                text = _WS.sub(" ", child.text_content or "")
                plain.append(text)
                md.append(text)
            elif not is_block and not tag.startswith("-") and not _dropped(child):
                inner_plain, inner_md = _inline(child)
                plain.append(inner_plain)
                md.append(_inline_markdown(child, inner_md))
            elif is_block and not _dropped(child):
                self._flush(plain, md)
                self.block(child, depth)
        self._flush(plain, md)

    def _flush(self, plain: list[str], md: list[str]) -> None:
        self.paragraph("".join(plain), "".join(md))
        plain.clear()
        md.clear()

    def block(self, node: LexborNode, depth: int) -> None:
        tag = node.tag or ""
        if tag in _HEADINGS:
            self.paragraph(*_inline(node), kind="heading", level=_HEADINGS[tag])
        elif tag in {"p", "dt", "summary", "figcaption", "caption", "address"}:
            self.paragraph(*_inline(node))
        elif tag == "pre":
            self.code(node)
        elif tag in {"ul", "ol"}:
            self.listing(node, depth)
        elif tag == "table":
            self.table(node)
        elif tag == "blockquote":
            start = len(self.blocks)
            self.container(node, depth)
            for i in range(start, len(self.blocks)):
                quoted = self.blocks[i]
                lines = quoted.markdown.split("\n")
                self.blocks[i] = Block(
                    quoted.kind, quoted.plain, "\n".join(f"> {x}" for x in lines), quoted.level
                )
        elif tag != "hr":
            self.container(node, depth)

    def code(self, node: LexborNode) -> None:
        text = (node.text(deep=True) or "").strip("\n")
        if not text.strip():
            return
        near = [node, node.css_first("code"), node.parent, node.parent.parent if node.parent else None]
        classes = " ".join((n.attributes.get("class") or "") for n in near if n is not None)
        match = _LANGUAGE.search(classes)
        language = match.group(1) if match else ""
        fence = "````" if "```" in text else "```"
        fenced = f"{fence}{language}\n{text.rstrip()}\n{fence}"
        self.blocks.append(Block("code", fenced, fenced))

    def listing(self, node: LexborNode, depth: int) -> None:
        ordered = node.tag == "ol"
        number = 0
        for item in node.iter():
            if item.tag != "li" or _dropped(item):
                continue
            number += 1
            marker = f"{number}." if ordered else "-"
            plain: list[str] = []
            md: list[str] = []
            emitted = False
            for child in item.iter(include_text=True):
                tag = child.tag or ""
                if tag.startswith("-") and tag != "-text":
                    continue
                nested = tag in {"ul", "ol", "pre", "table", "blockquote", "dl"} or (
                    tag == "div" and child.css_first(_BLOCK_SELECTOR) is not None
                )
                if nested and not _dropped(child):
                    emitted |= self._item(plain, md, marker, depth, emitted)
                    self.block(child, depth + 1)
                elif tag == "-text":
                    text = _WS.sub(" ", child.text_content or "")
                    plain.append(text)
                    md.append(text)
                elif not _dropped(child):
                    inner_plain, inner_md = _inline(child)
                    plain.append(f" {inner_plain} " if child.tag == "p" else inner_plain)
                    md.append(
                        f" {_inline_markdown(child, inner_md)} " if child.tag != "p" else f" {inner_md} "
                    )
            self._item(plain, md, marker, depth, emitted)

    def _item(self, plain: list[str], md: list[str], marker: str, depth: int, emitted: bool) -> bool:
        text_plain, text_md = (
            _clean("".join(plain)).replace("\n", " "),
            _clean("".join(md)).replace("\n", " "),
        )
        plain.clear()
        md.clear()
        if not text_plain:
            return False
        indent = "  " * depth
        bullet = marker if not emitted else " " * len(marker)
        self.blocks.append(
            Block("item", f"{indent}{bullet} {text_plain}", f"{indent}{bullet} {text_md}", depth)
        )
        return True

    def table(self, node: LexborNode) -> None:
        rows_plain: list[str] = []
        rows_md: list[str] = []
        for tr in node.css("tr"):
            cells = [_inline(cell) for cell in tr.iter() if cell.tag in {"td", "th"}]
            if not any(plain.strip() for plain, _ in cells):
                continue
            texts = [_clean(plain).replace("\n", " ") for plain, _ in cells]
            mds = [_clean(md).replace("\n", " ").replace("|", "\\|") for _, md in cells]
            rows_plain.append(" | ".join(texts))
            rows_md.append("| " + " | ".join(mds) + " |")
            if len(rows_md) == 1:
                rows_md.append("|" + " --- |" * len(mds))
        if rows_plain:
            self.blocks.append(Block("table", "\n".join(rows_plain), "\n".join(rows_md)))


def _decode_html(data: bytes, name: str) -> str:
    declared = _CHARSET.search(data[:4096])
    if declared and not data.startswith((b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff")):
        try:
            return data.decode(declared.group(1).decode("ascii"))
        except (LookupError, UnicodeDecodeError):
            pass
    return decode_bytes(data, name)


def _main_root(tree: LexborHTMLParser) -> tuple[LexborNode | None, bool]:
    """The element holding the main content, and whether it is a real main element (not <body>)."""
    for selector in ("main", "[role=main]"):
        node = tree.css_first(selector)
        if node is not None:
            return node, True
    articles = tree.css("article")
    if len(articles) == 1:
        return articles[0], True
    return tree.body or tree.root, False


def nesting_depth(html: str, stop_at: int = MAX_HTML_DEPTH) -> int:
    """How deep the elements of `html` nest, from one linear pass over its tags (an upper bound: an element
    left open counts as holding what follows); stops counting once past `stop_at`."""
    depth = deepest = 0
    for _, closing, name, empty in _TAG.findall(html):
        if not name or empty or name.lower() in _NOT_NESTING:
            continue
        if closing:
            depth = max(depth - 1, 0)
        else:
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > stop_at:
                    break
    return deepest


def html_blocks(html: str) -> tuple[list[Block], str | None]:
    """Blocks of the main content, and the <title>. A page nested deeper than MAX_HTML_DEPTH is refused
    (ParseError) before the parser sees it."""
    if nesting_depth(html) > MAX_HTML_DEPTH:
        raise ParseError(
            f"HTML nested more than {MAX_HTML_DEPTH} elements deep; not read (real pages nest 20-60 deep)",
            "Simplify or re-save the page; a page this deep is usually crafted to stall parsers.",
        )
    tree = LexborHTMLParser(html)
    title_node = tree.css_first("title")
    title = _clean(title_node.text(deep=True) or "") if title_node is not None else ""
    root, is_main = _main_root(tree)
    walker = _Walker(keep_header_headings=is_main)
    if root is not None:
        try:
            walker.container(root)
        except RecursionError as exc:
            raise ParseError("HTML nested too deeply to read", "Simplify or re-save the page.") from exc
    if not title:
        title = next((b.plain for b in walker.blocks if b.kind == "heading"), "")
    return walker.blocks, title or None


def html_to_markdown(html: str) -> str:
    """Clean markdown of a page's main content: # headings, paragraphs, lists, links, fenced code, tables."""
    blocks, _ = html_blocks(html)
    parts: list[str] = []
    previous: Block | None = None
    for block in blocks:
        text = f"{'#' * block.level} {block.markdown}" if block.kind == "heading" else block.markdown
        if previous is not None:
            parts.append("\n" if block.kind == "item" and previous.kind == "item" else "\n\n")
        parts.append(text)
        previous = block
    return "".join(parts).strip() + "\n" if parts else ""


def parse_html(data: bytes, name: str) -> ParsedDocument:
    blocks, title = html_blocks(_decode_html(data, name))
    builder = TextBuilder()
    stack: list[tuple[int, str]] = []
    headings: tuple[str, ...] = ()
    for block in blocks:
        if block.kind == "heading":
            headings = push_heading(stack, block.level, block.plain)
        kind: SegmentKind = "code" if block.kind == "code" else "table" if block.kind == "table" else "text"
        builder.add(block.plain, headings, kind)
    text, segments = builder.finish()
    return ParsedDocument(format="html", text=text, segments=segments, title=title)
