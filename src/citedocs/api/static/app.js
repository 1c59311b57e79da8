// citedocs web page: tabs, the status panel and pill, and the wiring of search, ask and sources.
// Plain ES modules, no build step, no external assets.
import { $, api, bytes, el, fileName } from "./dom.js";
import { askQuestion, initAsk, setModel } from "./ask.js";
import { initSearch, search, setFilters } from "./search.js";
import { initSources, loadSources, pollJobs } from "./sources.js";
import { closeReader } from "./reader.js";
import { setBounds } from "./thread.js";

const TABS = ["search", "ask", "sources", "status"];
const STATUS_MS = 5000;

// Each tab is a history entry (#search, #ask, ...): Back and links to a hash switch tabs, and Back first closes
// an open passage (its own entry, pushed by reader.js).
function select(name, focus = true, push = true) {
  for (const tab of TABS) {
    const on = tab === name;
    $("tab-" + tab).setAttribute("aria-selected", String(on));
    $("tab-" + tab).tabIndex = on ? 0 : -1;
    $("panel-" + tab).hidden = !on;
  }
  if (focus) $("tab-" + name).focus();
  if (name === "search") $("search-q").focus();
  if (name === "ask") $("question").focus();
  if (location.hash !== "#" + name) {
    if (push) history.pushState({ tab: name }, "", "#" + name);
    else history.replaceState({ tab: name }, "", "#" + name);
  }
}

function route() {
  if (!$("reader").hidden && !(history.state && history.state.reader)) closeReader(false);
  const wanted = location.hash.slice(1);
  if (TABS.includes(wanted) && $("tab-" + wanted).getAttribute("aria-selected") !== "true") select(wanted, false, false);
}

function initTabs() {
  for (const tab of TABS) $("tab-" + tab).addEventListener("click", () => select(tab, false));
  $("pill").addEventListener("click", () => select("status", false));
  document.querySelector(".tabs").addEventListener("keydown", (event) => {
    const at = TABS.findIndex((t) => $("tab-" + t) === document.activeElement);
    if (at < 0) return;
    if (event.key === "ArrowRight") select(TABS[(at + 1) % TABS.length]);
    if (event.key === "ArrowLeft") select(TABS[(at + TABS.length - 1) % TABS.length]);
  });
  document.addEventListener("keydown", (event) => {
    const typing = /^(INPUT|TEXTAREA|SELECT)$/.test(document.activeElement.tagName);
    if (event.key === "/" && !typing) {
      event.preventDefault();
      select("search", false);
    }
  });
  const wanted = location.hash.slice(1);
  select(TABS.includes(wanted) ? wanted : "search", false, false);
  window.addEventListener("popstate", route);
  window.addEventListener("hashchange", route);
}

function row(term, value) {
  return [el("dt", {}, term), el("dd", {}, value)];
}

function llmText(llm) {
  if (!llm.configured) return llm.problem ? "answers off: " + llm.problem + " " + (llm.next_step || "")
    : "none configured (answers off; search works; `citedocs model install` sets one up)";
  const reach = llm.reachable === true ? "reachable" : llm.reachable === false ? "not reachable" : llm.state;
  return (llm.model || "model") + " — " + reach + (llm.error ? " (" + llm.error + ")" : "");
}

function embedderText(e) {
  if (!e.name && e.state === "disabled") return "none (keyword search only)";
  return (e.name || "auto") + " — " + e.state.replace("not_loaded", "not loaded yet");
}

// The folder watchers (GET /status `watch`): how many watch, and any that cannot, with the reason.
function watchText(watchers) {
  if (!watchers.length) return "no folders";
  const live = watchers.filter((w) => w.state === "watching" || w.state === "polling").length;
  const odd = watchers.filter((w) => !["watching", "polling"].includes(w.state))
    .map((w) => fileName(w.folder || w.path || "") + ": " + w.state + (w.reason ? " (" + w.reason + ")" : ""));
  return live + " of " + watchers.length + " folders live" + (odd.length ? " · " + odd.join("; ") : "");
}

function ms(timing) {
  if (!timing || timing.p50 === null || timing.p50 === undefined) return "—";
  return Math.round(timing.p50) + " / " + Math.round(timing.p95) + " ms";
}

function renderStatus(s) {
  $("version").textContent = "v" + s.version;
  const t = s.totals, e = s.embedder, st = s.stats, timings = st.timings_ms || {};
  $("status-grid").replaceChildren(
    el("div", { class: "card", id: "status-models" }, el("h2", {}, "Models"), el("dl", {},
      ...row("embedder", embedderText(e)),
      ...row("vectors", e.vectors + " / " + e.chunks + " chunks"),
      ...row("LLM", llmText(s.llm)),
      s.llm.base_url ? row("endpoint", s.llm.base_url) : [])),
    el("div", { class: "card", id: "status-index" }, el("h2", {}, "Index"), el("dl", {},
      ...row("sources", String(s.sources)),
      ...row("documents", t.indexed + " indexed · " + t.failed + " failed"),
      ...row("chunks", String(t.chunks)),
      ...row("site pages not fetched", String(s.links || 0)),
      ...row("watching", watchText(s.watch || [])),
      ...row("size", bytes(s.db_bytes)),
      ...row("changes", s.writable ? "allowed from this page" : s.read_only_reason))),
    el("div", { class: "card", id: "status-stats" }, el("h2", {}, "Answers (GET /stats)"), el("dl", {},
      ...row("answers", st.answered + " answered · " + st.refusals + " refused · " + st.errors + " failed"),
      ...row("first token P50/P95", ms(timings.ttft_ms)),
      ...row("total P50/P95", ms(timings.total_ms)),
      ...row("retrieval P50/P95", ms(timings.retrieval_ms)),
      ...row("in flight", st.in_flight + " of " + st.max_concurrent),
      ...row("tokens", st.tokens.prompt_total + " prompt · " + st.tokens.completion_total + " completion"))),
    el("div", { class: "card" }, el("h2", {}, "About"), el("dl", {},
      ...row("version", "citedocs " + s.version),
      ...row("API", el("a", { href: "/docs" }, "/docs")),
      ...row("MCP", "/mcp (when started by citedocs serve)"))));
  const dot = (kind) => el("span", { class: "dot " + kind });
  const embedKind = e.state === "ready" ? "ok" : e.state === "loading" ? "busy" : e.state.startsWith("failed") ? "bad" : "off";
  const llmKind = !s.llm.configured ? "off" : s.llm.reachable === false ? "bad" : s.llm.reachable ? "ok" : "busy";
  $("pill").replaceChildren(dot(embedKind), "embedder ", dot(llmKind), "LLM",
    s.active ? el("span", { class: "badge warn" }, " indexing") : "");
  $("pill").title = "embedder: " + embedderText(e) + "; LLM: " + llmText(s.llm);
  setModel(s.llm);
}

// The first screen: what is indexed, example questions from the documents' own headings, how to get a model.
function exampleQuestion(topic) {
  if (/[?？]$/.test(topic)) return topic;
  return /[\u3040-\u30ff\u4e00-\u9fff]/.test(topic) ? "「" + topic + "」について教えてください。"
    : "What do my documents say about " + topic + "?";
}

async function renderWelcome(s) {
  let topics = [];
  try { topics = (await api("/topics")).topics; } catch (_) { topics = []; }
  const t = s.totals;
  const box = $("welcome");
  if (!t.indexed) {
    box.replaceChildren(el("h2", {}, "Start here"), el("p", {}, "Nothing is indexed yet. Add a folder of documents or a ",
      "documentation site in the ", el("a", { href: "#sources" }, "Sources tab"), ", then search or ask here."));
  } else {
    box.replaceChildren(el("h2", {}, "Start here"),
      el("p", {}, t.indexed + " documents (" + t.chunks + " passages) from " + s.sources + " folder" +
        (s.sources === 1 ? "" : "s and sites") + " are indexed. Type above to search them, or ask a question:"),
      topics.length ? el("ul", { class: "examples" }, ...topics.map((topic) => el("li", {},
        el("button", { type: "button", class: "ghost example", onclick: () => { select("ask", false); askQuestion(exampleQuestion(topic)); } },
          exampleQuestion(topic))))) : "",
      s.llm.configured ? "" : el("p", { class: "small muted" }, "Answers need a language model: run ",
        el("code", {}, "citedocs model install"), " and restart the server (",
        el("a", { href: "/static/help.html#models", target: "_blank", rel: "noopener" }, "how"), "). Search works without one."));
  }
  $("welcome").hidden = Boolean($("search-q").value.trim());
}

let welcomed = false;

async function refreshStatus() {
  try {
    const s = await api("/status");
    setBounds(s.conversation);
    renderStatus(s);
    if (!welcomed) {
      welcomed = true;
      renderWelcome(s);
    }
  } catch (err) {
    $("pill").replaceChildren(el("span", { class: "dot bad" }), "server unreachable");
    $("pill").title = err.text || String(err);
  }
  setTimeout(refreshStatus, STATUS_MS);
}

// The header's height, so the phone's passage sheet opens below it and the tabs stay reachable.
function trackHeader() {
  const set = () => document.documentElement.style.setProperty("--top-h", document.querySelector(".top").offsetHeight + "px");
  new ResizeObserver(set).observe(document.querySelector(".top"));
  set();
}

trackHeader();
initTabs();
initSearch();
initAsk();
initSources((body) => setFilters(body.sources, body.file_types));
refreshStatus();
loadSources().then(() => {
  performance.mark("citedocs:ready"); // filters filled: the page is usable
  if ($("search-q").value.trim()) search();
});
pollJobs(false);
