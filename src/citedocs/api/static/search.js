// Search as you type: POST /search (works with no model), debounced; newer queries win over older ones.
import { $, api, copyText, dirName, el, fileName, reference, relativePath, setNote, snippetNodes, whereText } from "./dom.js";
import { closeReader, initReader, openInContext } from "./reader.js";

const DEBOUNCE_MS = 180;
const RESULTS = 20;
let sequence = 0;
let controller = null;
let hits = [];

export function initSearch() {
  initReader(() => {
    $("panel-search").querySelector(".split").classList.toggle("solo", $("reader").hidden);
    for (const li of document.querySelectorAll("#results .hit")) li.classList.remove("active");
  });
  $("panel-search").querySelector(".split").classList.add("solo");
  const run = debounceSearch();
  $("search-q").addEventListener("input", run);
  for (const id of ["search-mode", "search-source", "search-type"]) $(id).addEventListener("change", () => search());
  $("search-form").addEventListener("submit", (event) => {
    event.preventDefault();
    search();
  });
  $("search-q").addEventListener("keydown", (event) => {
    if (event.key === "ArrowDown") {
      const first = document.querySelector("#results .hit-open");
      if (first) { event.preventDefault(); first.focus(); }
    }
  });
  $("results").addEventListener("keydown", (event) => {
    const buttons = [...document.querySelectorAll("#results .hit-open")];
    const at = buttons.indexOf(document.activeElement);
    if (at < 0) return;
    if (event.key === "ArrowDown" && at + 1 < buttons.length) { event.preventDefault(); buttons[at + 1].focus(); }
    if (event.key === "ArrowUp") { event.preventDefault(); (at ? buttons[at - 1] : $("search-q")).focus(); }
  });
}

function debounceSearch() {
  let timer = null;
  return () => {
    clearTimeout(timer);
    timer = setTimeout(search, DEBOUNCE_MS);
  };
}

export function setFilters(sources, fileTypes) {
  const choices = sources.map((s) => [s.kind === "site" ? s.name : s.uri,
    (s.kind === "site" ? "site " + s.name : fileName(s.uri) + "/") + " (" + s.docs + ")"]);
  fill($("search-source"), "all sources", choices);
  fill($("ask-source"), "all sources", choices); // Ask takes the same folder or site filter
  fill($("search-type"), "all types", Object.entries(fileTypes || {}).map(([type, n]) => [type, type + " (" + n + ")"]));
}

function fill(select, allLabel, options) {
  const keep = select.value;
  select.replaceChildren(el("option", { value: "" }, allLabel), ...options.map(([value, label]) => el("option", { value }, label)));
  if ([...select.options].some((o) => o.value === keep)) select.value = keep;
}

export async function search() {
  const query = $("search-q").value.trim();
  const mine = ++sequence;
  if (controller) controller.abort();
  $("welcome").hidden = Boolean(query) || !$("welcome").childElementCount;
  if (!query) {
    hits = [];
    $("results").replaceChildren();
    setNote($("search-note"), "");
    return;
  }
  controller = new AbortController();
  const body = { query, k: RESULTS, mode: $("search-mode").value };
  if ($("search-source").value) body.source = $("search-source").value;
  if ($("search-type").value) body.file_type = $("search-type").value;
  const started = performance.now();
  let result;
  try {
    result = await api("/search", { json: body, signal: controller.signal });
  } catch (err) {
    if (err.name === "AbortError" || mine !== sequence) return;
    setNote($("search-note"), err.text, "bad");
    return;
  }
  if (mine !== sequence) return;
  hits = result.hits;
  render(result, performance.now() - started);
}

function render(result, ms) {
  const list = $("results");
  const bits = [];
  bits.push(hits.length ? hits.length + (hits.length === RESULTS ? "+" : "") + " passages" : "No passage matches");
  bits.push(result.mode + " ranking");
  bits.push(Math.round(ms) + " ms");
  const text = bits.join(" · ") + (result.note ? " — " + result.note : "");
  setNote($("search-note"), text, result.note ? "warn" : "");
  list.replaceChildren(...hits.map((hit, i) => item(hit, i)));
  list.dataset.query = result.query;
  performance.mark("citedocs:results"); // bench/bench_web.py measures typing -> results with it
}

// A documentation page not fetched yet (kind "link"): its title and llms.txt description, and its URL.
function linkItem(hit, i) {
  const page = el("a", { href: hit.path, target: "_blank", rel: "noopener noreferrer", class: "hit-open" },
    hit.heading || hit.path);
  return el("li", { class: "hit link", dataset: { n: i } },
    el("div", { class: "row" }, page, el("span", { class: "badge" }, "not fetched")),
    el("div", { class: "where" }, hit.path, hit.source ? " · " + hit.source : ""),
    el("p", { class: "snippet" }, ...snippetNodes(hit.snippet)),
    el("p", { class: "hint" }, "Ask a question about it and the page is fetched first."));
}

function item(hit, i) {
  if (hit.kind === "link") return linkItem(hit, i);
  const open = el("button", { type: "button", class: "hit-open", title: "Read it in context (Enter)",
    onclick: () => show(i) }, fileName(hit.path), " ", el("span", { class: "dir" }, dirName(relativePath(hit.path, hit.source))));
  const copy = el("button", { type: "button", class: "ghost small copy", title: "Copy " + reference(hit),
    onclick: async (event) => {
      const ok = await copyText(reference(hit));
      event.target.textContent = ok ? "Copied" : "Copy failed";
      setTimeout(() => (event.target.textContent = "Copy path:line"), 1500);
    } }, "Copy path:line");
  return el("li", { class: "hit", dataset: { n: i } },
    el("div", { class: "row" }, open, copy),
    el("div", { class: "where" }, whereText(hit) || "—", hit.source ? " · " + (hit.source.startsWith("/") ? fileName(hit.source) + "/" : hit.source) : ""),
    el("p", { class: "snippet" }, ...snippetNodes(hit.snippet)));
}

function show(i) {
  const hit = hits[i];
  if (!hit || hit.kind === "link") return;
  for (const li of document.querySelectorAll("#results .hit")) li.classList.toggle("active", Number(li.dataset.n) === i);
  const split = $("panel-search").querySelector(".split");
  split.classList.remove("solo");
  openInContext(hit, split);
}

export { closeReader };
