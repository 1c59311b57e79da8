// Safe Markdown for answers: headings, paragraphs, lists, fenced code, `code`, **bold**, *emphasis* and links
// whose URL is http(s). Built with DOM nodes only: any HTML in the text (a model's or a document's) stays text.
import { el } from "./dom.js";

const FENCE = /^\s{0,3}(```|~~~)/;
const HEADING = /^\s{0,3}(#{1,6})[ \t]+/;
const BULLET = /^\s{0,3}[-*+][ \t]+/;
const NUMBERED = /^\s{0,3}(\d{1,9})[.)][ \t]+/;
const RULE = /^\s{0,3}([-*_])(\s*\1){2,}\s*$/;
const INLINE = /`([^`\n]+)`|\*\*(?=\S)([^\n]*?\S)\*\*|__(?=\S)([^\n]*?\S)__|\*(?=[^\s*])([^*\n]*?[^\s*])\*|\[([^\]\n]+)\]\(([^()\s]+)\)/g;

// The text's blocks, each with the offsets of its inline content in `text` (so callers can map spans of the
// raw text, such as checked sentences, onto what is drawn): {type: h|p|ul|ol|code|hr, level, ranges, code}.
export function markdownBlocks(text) {
  const out = [];
  const lines = [];
  let at = 0;
  for (const line of String(text).split("\n")) {
    lines.push({ line, start: at, end: at + line.length });
    at += line.length + 1;
  }
  let para = null;
  let list = null;
  let fence = null;
  const closePara = () => { if (para) out.push(para); para = null; };
  const closeList = () => { if (list) out.push(list); list = null; };
  for (const { line, start, end } of lines) {
    if (fence) {
      if (FENCE.test(line) && line.trim().startsWith(fence.marker)) { out.push(fence); fence = null; }
      else fence.code.push(line);
      continue;
    }
    const fenced = line.match(FENCE);
    if (fenced) {
      closePara(); closeList();
      fence = { type: "code", marker: fenced[1], code: [], ranges: [] };
      continue;
    }
    if (!line.trim()) { closePara(); closeList(); continue; }
    const heading = line.match(HEADING);
    if (heading) {
      closePara(); closeList();
      out.push({ type: "h", level: heading[1].length, ranges: [[start + heading[0].length, end]] });
      continue;
    }
    if (RULE.test(line)) { closePara(); closeList(); out.push({ type: "hr", ranges: [] }); continue; }
    const item = line.match(BULLET) || line.match(NUMBERED);
    if (item) {
      const type = line.match(BULLET) ? "ul" : "ol";
      closePara();
      if (!list || list.type !== type) {
        closeList();
        list = { type, ranges: [], first: type === "ol" ? parseInt(item[1], 10) : 1 };
      }
      list.ranges.push([start + item[0].length, end]);
      continue;
    }
    if (list && /^\s{2,}/.test(line)) { // a continuation line of the last item
      list.ranges[list.ranges.length - 1][1] = end;
      continue;
    }
    closeList();
    if (para) para.ranges[0][1] = end;
    else para = { type: "p", ranges: [[start, end]] };
  }
  closePara(); closeList();
  if (fence) out.push(fence);
  return out;
}

// Inline Markdown of one run of text; `plain(text)` draws the text between the marks (citations, say).
export function inlineNodes(text, plain = (t) => [document.createTextNode(t)]) {
  const out = [];
  let last = 0;
  for (const m of String(text).matchAll(INLINE)) {
    if (m.index > last) out.push(...plain(text.slice(last, m.index)));
    if (m[1] !== undefined) out.push(el("code", {}, m[1]));
    else if (m[2] !== undefined || m[3] !== undefined) out.push(el("strong", {}, ...inlineNodes(m[2] ?? m[3], plain)));
    else if (m[4] !== undefined) out.push(el("em", {}, ...inlineNodes(m[4], plain)));
    else out.push(link(m[5], m[6], plain));
    last = m.index + m[0].length;
  }
  if (last < text.length) out.push(...plain(text.slice(last)));
  return out;
}

function link(label, href, plain) {
  let url = null;
  try { url = new URL(href); } catch (_) { url = null; }
  if (!url || (url.protocol !== "http:" && url.protocol !== "https:")) {
    return el("span", { class: "md-link-refused", title: "Not a web link, so not clickable" }, "[", ...plain(label), "](", href, ")");
  }
  return el("a", { href: url.href, target: "_blank", rel: "noopener noreferrer nofollow" }, ...inlineNodes(label, plain));
}

// The blocks drawn; `paint(start, end)` gives the nodes for a range of the text (default: inline Markdown).
export function renderMarkdown(text, paint) {
  const draw = paint || ((start, end) => inlineNodes(String(text).slice(start, end)));
  return markdownBlocks(text).map((block) => {
    if (block.type === "code") return el("pre", { class: "md-code" }, el("code", {}, block.code.join("\n")));
    if (block.type === "hr") return el("hr");
    if (block.type === "h") return el("h" + Math.min(6, block.level + 2), { class: "md-h" }, ...draw(...block.ranges[0]));
    if (block.type === "p") return el("p", {}, ...draw(...block.ranges[0]));
    const list = el(block.type, block.type === "ol" && block.first !== 1 ? { start: block.first } : {});
    for (const range of block.ranges) list.append(el("li", {}, ...draw(...range)));
    return list;
  });
}
