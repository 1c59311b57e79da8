// A passage in its context: GET /read (the confined read `citedocs read` uses), the hit's lines highlighted.
import { $, api, copyText, el, fileName, reference, setNote, whereText } from "./dom.js";

const CONTEXT_LINES = 8;
const MORE_LINES = 40;
let current = null; // { hit, start, end, total }
let onClose = () => {};

export function initReader(closeHook) {
  onClose = closeHook || onClose;
  $("reader-close").addEventListener("click", closeReader);
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

export function closeReader() {
  const wasOpen = !$("reader").hidden;
  $("reader").hidden = true;
  current = null;
  onClose(wasOpen);
}

// `host` is where the reader goes (the search results' side, or the answer's sources card).
export async function openInContext(hit, host) {
  current = { hit, start: 1, end: 1, total: null };
  if (host && $("reader").parentElement !== host) host.append($("reader"));
  $("reader").hidden = false;
  $("reader-file").textContent = hit.path;
  $("reader-loc").textContent = [whereText(hit), hit.source ? "in " + hit.source : ""].filter(Boolean).join(" · ");
  setNote($("reader-note"), "");
  $("reader-text").replaceChildren(el("span", { class: "muted" }, "Reading " + fileName(hit.path) + "…"));
  const start = Math.max(1, (hit.line_start || 1) - CONTEXT_LINES);
  const end = (hit.line_end || hit.line_start || 1) + CONTEXT_LINES;
  await load(start, end);
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
