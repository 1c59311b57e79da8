// A passage in its context: GET /read (the confined read `citedocs read` uses), the hit's lines highlighted.
import { $, api, copyText, el, fileName, reference, setNote, whereText } from "./dom.js";

const CONTEXT_LINES = 8;
const MORE_LINES = 40;
let current = null; // { hit, start, end, total }
let onClose = () => {};

export function initReader(closeHook) {
  onClose = closeHook || onClose;
  $("reader-close").addEventListener("click", () => closeReader());
  $("reader-copy").addEventListener("click", async () => {
    if (!current) return;
    const ok = await copyText(reference(current.hit));
    $("reader-copy").textContent = ok ? "Copied" : "Copy failed";
    setTimeout(() => ($("reader-copy").textContent = "Copy path:line"), 1500);
  });
  $("reader-before").addEventListener("click", () => current && load(Math.max(1, current.start - MORE_LINES), current.end));
  $("reader-after").addEventListener("click", () => current && load(current.start, current.end + MORE_LINES));
  $("reader").addEventListener("keydown", (event) => {
    if (event.key === "Escape") closeReader();
  });
}

// `fromButton`: closed by ✕ or Esc, so its history entry (pushed when it opened) is taken back too.
export function closeReader(fromButton = true) {
  const wasOpen = !$("reader").hidden;
  if (wasOpen && fromButton && history.state && history.state.reader) history.back();
  $("reader").hidden = true;
  current = null;
  onClose(wasOpen);
}

// `host` is where the reader goes (the search results' side, or the answer's sources card).
export async function openInContext(hit, host) {
  current = { hit, start: 1, end: 1, total: null };
  if (host && $("reader").parentElement !== host) host.append($("reader"));
  if ($("reader").hidden && !(history.state && history.state.reader)) history.pushState({ reader: true }, "", location.hash);
  $("reader").hidden = false;
  $("reader-file").textContent = hit.path;
  $("reader-loc").textContent = [whereText(hit), hit.source ? "in " + hit.source : ""].filter(Boolean).join(" · ");
  setNote($("reader-note"), "");
  $("reader-original").replaceChildren(...original(hit));
  $("reader-text").replaceChildren(el("span", { class: "muted" }, "Reading " + fileName(hit.path) + "…"));
  const start = Math.max(1, (hit.line_start || 1) - CONTEXT_LINES);
  const end = (hit.line_end || hit.line_start || 1) + CONTEXT_LINES;
  await load(start, end);
  showPage(hit);
  const first = $("reader-text").querySelector(".ln.hl");
  if (first) first.scrollIntoView({ block: "center" });
  $("reader-text").focus({ preventScroll: true });
}

async function load(start, end) {
  const hit = current && current.hit;
  if (!hit) return;
  const query = new URLSearchParams({ path: hit.path, start: String(start), end: String(end) });
  let body;
  try {
    body = await api("/read?" + query);
  } catch (err) {
    if (!current || current.hit !== hit) return;
    // Outside a registered folder (or a page that cannot be fetched): show the indexed passage itself.
    setNote($("reader-note"), err.text + (hit.text ? " The indexed passage is shown instead." : ""), "warn");
    $("reader-text").replaceChildren(...lines(hit.text || "", hit.line_start || 1, hit));
    return;
  }
  if (!current || current.hit !== hit) return;
  Object.assign(current, { start: body.start_line, end: body.end_line, total: body.total_lines });
  $("reader-text").replaceChildren(...lines(body.text, body.start_line, hit));
  $("reader-before").disabled = body.start_line <= 1;
  $("reader-after").disabled = body.end_line >= body.total_lines;
  $("reader-text").dataset.start = body.start_line;
  $("reader-text").dataset.end = body.end_line;
}

function lines(text, first, hit) {
  return String(text).split("\n").map((line, i) => {
    const n = first + i;
    const inside = hit.line_start && n >= hit.line_start && n <= (hit.line_end || hit.line_start);
    return el("span", { class: inside ? "ln hl" : "ln", "data-n": n }, line || " ");
  });
}

// The original at the cited place: a PDF's page as an image with the passage marked (GET /read/page, rendered
// by the server, confined as /read is), or a site page opened at the passage by a text fragment.
export function original(hit) {
  const path = String(hit.path || "");
  if (/^https?:\/\//i.test(path)) {
    return [el("a", { href: textFragmentUrl(path, hit.text), target: "_blank", rel: "noopener noreferrer",
      class: "open-original" }, "Open the page at this passage ↗")];
  }
  if (/\.pdf$/i.test(path) && hit.page) {
    const img = el("img", { class: "page-image", id: "reader-page",
      alt: "Page " + hit.page + " of " + fileName(path) + ", the cited passage marked in yellow" });
    img.addEventListener("error", () => img.replaceWith(el("p", { class: "note warn" },
      "The page image could not be made; the text of the page is below.")));
    return [el("figure", { class: "page-figure" }, img,
      el("figcaption", { class: "small muted" }, "Page " + hit.page + " of " + fileName(path) + " (the passage marked)"))];
  }
  return [];
}

// The PDF page's image, once the passage's text is known (a search hit carries none: its highlighted lines).
function showPage(hit) {
  const img = $("reader-page");
  if (!img || !current || current.hit !== hit) return;
  const marked = [...$("reader-text").querySelectorAll(".ln.hl")].map((line) => line.textContent).join("\n");
  const text = String(hit.text || marked).slice(0, 8000);
  img.src = "/read/page?" + new URLSearchParams({ path: hit.path, page: String(hit.page), text });
}

// A URL that opens a page scrolled to the passage with it highlighted (a text fragment: #:~:text=start,end).
export function textFragmentUrl(url, passage) {
  const line = String(passage || "").split("\n").map((l) => l.replace(/^[#>*\-\s]+|[*_`|]/g, "").trim())
    .find((l) => l.split(/\s+/).length >= 3) || "";
  const wordsOf = line.split(/\s+/).filter(Boolean);
  if (!wordsOf.length) return url;
  const part = (ws) => encodeURIComponent(ws.join(" ")).replace(/-/g, "%2D").replace(/,/g, "%2C");
  const long = wordsOf.length > 8; // then its first and last words: the whole passage is highlighted
  const start = part(wordsOf.slice(0, long ? 5 : 8));
  const end = long ? "," + part(wordsOf.slice(-3)) : "";
  return url.split("#")[0] + "#:~:text=" + start + end;
}
