// Ask: POST /ask as server-sent events (sources, evidence?, token*, done | error), read with fetch streams.
// After `done`, the answer is drawn from `done.sentences`: each sentence with the citations the checker
// kept, and the ones no passage supports marked "unverified".
import { $, el, fileName, relativePath, setNote, signIn, whereText } from "./dom.js";
import { inlineNodes, renderMarkdown } from "./markdown.js";
import { MAX_QUESTION, languageOf, words } from "./messages.js";
import { openInContext } from "./reader.js";
import { clearQuotes, renderQuotes } from "./quotes.js";
import { beginTurn, endTurn, history, initThread, searched } from "./thread.js";

const CITATION = /\s*\[(?:(?:sources?|refs?|ref\.)\s*)?(\d{1,4}(?:\s*(?:,|-|–|and)\s*\d{1,4})*)\]/gi;
const UNVERIFIED = /\s*\[unverified\]/gi;
const TRAILING = /[.!?:;。！？]*$/; // citations go before the sentence's end mark (Markdown marks stay whole)
let sources = [];
let controller = null;
let llm = null; // the status route's llm object
let noModelShown = false;
let say = words("en"); // the current question's language

export function initAsk() {
  initThread();
  $("ask-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const question = $("question").value.trim();
    if (question && !controller && question.length <= MAX_QUESTION) ask(question);
  });
  $("question").addEventListener("input", checkLength);
  $("question").addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey) {
      event.preventDefault();
      $("ask-form").requestSubmit();
    }
  });
  $("stop").addEventListener("click", () => controller && controller.abort());
  $("passage-open").addEventListener("click", () => {
    const n = Number($("passage").dataset.n);
    if (sources[n - 1]) openFromAsk(sources[n - 1]);
  });
  document.addEventListener("keydown", (event) => {
    if (event.key === "Escape") hidePop();
  });
}

// Fill the question box and ask (the first screen's example questions).
export function askQuestion(question) {
  $("question").value = question;
  checkLength();
  if (!controller) ask(question);
}

// The 2,000-character limit is said, not applied silently (the box has no maxlength that would cut a paste).
function checkLength() {
  const text = $("question").value.trim();
  const over = text.length > MAX_QUESTION;
  $("ask").disabled = over || Boolean(controller);
  $("question").setAttribute("aria-invalid", String(over));
  setNote($("question-note"), over ? words(languageOf(text)).tooLong(text.length) : "", over ? "warn" : "");
}

function openFromAsk(source) {
  $("panel-search").querySelector(".split").classList.add("solo");
  openInContext(source, $("sources"));
}

// Called with /status's `llm` whenever it is read: the no-model notice is shown once, not per question.
export function setModel(info) {
  llm = info;
  const box = $("no-model");
  if (info && !info.configured && !noModelShown) {
    noModelShown = true;
    box.hidden = false;
    box.replaceChildren("No language model is configured, so questions get no written answer here — but you still see ",
      "the passages each question retrieves, and search works. To get one: run ", el("code", {}, "citedocs model install"),
      " (downloads a small local model), or point CITEDOCS_LLM_BASE_URL at Ollama, llama.cpp, vLLM or a hosted API; ",
      "then restart ", el("code", {}, "citedocs serve"), ". How: ",
      el("a", { href: "/static/help.html#models", target: "_blank", rel: "noopener" }, "the models guide"), ".");
  } else if (info && info.configured) {
    box.hidden = true;
  }
}

function numbersOf(inner) {
  const out = [];
  for (const part of inner.split(/\s*(?:,|and)\s*/)) {
    const [a, b] = part.split(/\s*[-–]\s*/).map((x) => parseInt(x, 10));
    if (Number.isNaN(a)) continue;
    if (!Number.isNaN(b) && b >= a && b - a <= 50) for (let n = a; n <= b; n++) out.push(n);
    else out.push(a);
  }
  return out;
}

function citeButton(n, invalid) {
  const bad = n < 1 || n > sources.length || (invalid && invalid.includes(n));
  const button = el("button", { type: "button", class: bad ? "cite invalid" : "cite", dataset: { n } }, String(n));
  if (bad) {
    button.title = "Source [" + n + "] does not exist: the model invented this citation.";
    return button;
  }
  button.setAttribute("aria-label", "Source " + n + ": " + fileName(sources[n - 1].path));
  button.addEventListener("click", () => showPassage(n));
  button.addEventListener("mouseenter", () => showPop(n, button));
  button.addEventListener("focus", () => showPop(n, button));
  button.addEventListener("mouseleave", hidePop);
  button.addEventListener("blur", hidePop);
  return button;
}

// Plain text with [n] markers as buttons.
function withCitations(text, invalid) {
  const out = [];
  let last = 0;
  for (const match of text.matchAll(CITATION)) {
    out.push(document.createTextNode(text.slice(last, match.index) + (match[0].startsWith(" ") ? " " : "")));
    for (const n of numbersOf(match[1])) out.push(citeButton(n, invalid));
    last = match.index + match[0].length;
  }
  out.push(document.createTextNode(text.slice(last)));
  return out;
}

// Text as safe Markdown, its [n] markers as buttons (inline Markdown first, citations in the plain runs).
function markdownWithCitations(text, invalid) {
  return renderMarkdown(text, (start, end) => inlineNodes(text.slice(start, end), (t) => withCitations(t, invalid)));
}

function showAnswer(nodes) {
  const box = $("answer");
  box.classList.remove("empty");
  box.replaceChildren(...nodes);
}

function renderStreaming(text) {
  showAnswer(markdownWithCitations(text));
}

// The checked answer (as answer/citations.py repairs it): Markdown blocks, each sentence in them marked by its
// verdict. Others may add to an answer's nodes (quotes, a thread) by wrapping these functions.
export function renderChecked(done) {
  const raw = done.raw_answer || "";
  const sentences = done.sentences || [];
  if (isWithheld(done)) {
    // The model answered but its sources hold too little of it; its words stay one click away.
    const shown = el("details", { class: "withheld" },
      el("summary", {}, say.withheldSummary),
      el("div", {}, ...checkedNodes(raw, sentences)));
    showAnswer([...markdownWithCitations(done.answer || ""), shown]);
    return;
  }
  if (done.refused || !raw || !sentences.length) {
    showAnswer(markdownWithCitations(done.answer || "", done.invalid_citations));
    return;
  }
  showAnswer(checkedNodes(raw, sentences));
  $("legend").hidden = !sentences.some((s) => s.checked);
}

function isWithheld(done) {
  return Boolean(done.refused && done.refusal_reason && !done.refused_before_model && done.raw_answer &&
    (done.sentences || []).length);
}

export function checkedNodes(raw, sentences) {
  return renderMarkdown(raw, (start, end) => paintChecked(raw, sentences, start, end));
}

// The nodes for raw[start:end): the parts of sentences inside it, each in a span of its verdict.
function paintChecked(raw, sentences, start, end) {
  const out = [];
  let at = start;
  const plain = (a, b) => inlineNodes(raw.slice(a, b).replace(UNVERIFIED, ""), (t) => withCitations(t));
  for (const s of sentences) {
    if (s.end <= start || s.start >= end) continue;
    const a = Math.max(s.start, start);
    const b = Math.min(s.end, end);
    if (a > at) out.push(...plain(at, a));
    at = b;
    if (s.kind === "code") {
      out.push(...plain(a, b));
      continue;
    }
    const rest = raw.slice(b, s.end).replace(CITATION, "").replace(UNVERIFIED, "").trim();
    out.push(sentenceSpan(s, raw.slice(a, b), rest === ""));
  }
  if (at < end) out.push(...plain(at, end));
  return out;
}

// One sentence (or the part of it in one block); its citations and badge go after its last part.
function sentenceSpan(s, text, last) {
  const numbers = s.supported ? s.supported_by : s.cited.filter((n) => n >= 1 && n <= sources.length);
  const bare = text.replace(CITATION, "").replace(UNVERIFIED, "").replace(/\s+$/, "");
  const cut = last ? bare.search(TRAILING) : bare.length;
  const kind = s.left_out ? "sent left-out" : !s.checked ? "sent" : s.supported ? "sent ok" : "sent unsupported";
  const span = el("span", { class: kind, dataset: { support: s.support } }, ...inlineNodes(bare.slice(0, cut)));
  if (last) {
    for (const n of numbers) span.append(" ", citeButton(n));
    if (s.left_out) {
      span.append(" ", el("span", { class: "badge", title: "Asked whether the passage it cites says this, the " +
        "model said no: it is not part of the answer." }, "left out"));
    } else if (!s.supported) {
      span.append(" ", el("span", { class: "badge bad", title: "No passage holds this sentence's content " +
        "(support " + Math.round(s.support * 100) + "%): check it before you rely on it." }, "unverified"));
    }
    span.append(bare.slice(cut));
  }
  span.title = s.left_out ? "Left out of the answer: the model did not find it in the passage it cites" :
    s.checked ? (s.supported ? "Supported by " + numbers.map((n) => "[" + n + "]").join("") +
    " (" + Math.round(s.support * 100) + "% of its content)" : "Not supported by the sources") : "";
  return span;
}

function renderSources(list, note) {
  sources = list || [];
  const ol = $("source-list");
  if (!sources.length) {
    ol.replaceChildren(el("li", { class: "empty" }, note || "No passage matched the question."));
    return;
  }
  ol.replaceChildren(...sources.map((s) => el("li", { dataset: { n: s.n } },
    el("button", { type: "button", onclick: () => showPassage(s.n) },
      el("span", { class: "num" }, "[" + s.n + "]"), fileName(s.path),
      el("span", { class: "where" }, whereText(s) || relativePath(s.path, s.source))))));
}

// The evidence event's best sentences, cleaned for reading: no Markdown marks, table pipes, JSON or repeats.
// The server cleans them already (answer/readable.py, the same rules): this second pass leaves those as they are.
export function cleanEvidence(items) {
  const seen = new Set();
  const out = [];
  for (const item of items || []) {
    const text = String(item.text || "").replace(/^\s{0,3}#{1,6}\s+/gm, "").replace(/\s*\|\s*/g, " · ")
      .replace(/`+([^`]*)`+/g, "$1").replace(/\*\*(?=\S)(.+?)(?<=\S)\*\*/g, "$1")
      .replace(/(?<!\w)__(?=\S)([^_]*?\s[^_]*?)(?<=\S)__(?!\w)/g, "$1")
      .replace(/^[\s·>*-]+|[\s·]+$/g, "").replace(/\s+/g, " ").trim();
    const marks = (text.match(/[{}\[\]":]/g) || []).length;
    const size = text.length + (text.match(/[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]/g) || []).length;
    if (size < 12 || marks > text.length * 0.08) continue; // a JSON or code fragment, not a sentence (CJK: 2 each)
    const key = text.toLowerCase();
    if (seen.has(key)) continue;
    seen.add(key);
    out.push({ ...item, text });
  }
  return out;
}

function renderEvidence(data) {
  const items = cleanEvidence(data && (data.evidence || data.sentences));
  if (!items.length) return;
  $("evidence").hidden = false;
  $("evidence").open = true;
  $("evidence-summary").textContent = say.evidenceWaiting;
  $("evidence-list").replaceChildren(...items.map((s) => el("li", {}, s.text, " ",
    s.n ? citeButton(s.n) : "", s.path ? el("span", { class: "small muted" }, " " + fileName(s.path) +
      (s.line_start ? ":" + s.line_start : "")) : "")));
}

// Once the answer is settled the evidence folds, and its summary says what it was for (honest after a refusal,
// a withheld answer or Stop).
function settleEvidence(outcome) {
  if ($("evidence").hidden) return;
  $("evidence").open = false;
  $("evidence-summary").textContent = say["evidence" + outcome];
}

function showPassage(n) {
  const source = sources[n - 1];
  if (!source) return;
  hidePop();
  $("passage").hidden = false;
  $("passage").dataset.n = n;
  $("passage-file").textContent = "[" + n + "] " + source.path;
  $("passage-loc").textContent = whereText(source) + (source.source ? " · from " + source.source : "");
  $("passage-text").textContent = source.text;
  for (const node of document.querySelectorAll("#answer .cite, #evidence .cite, #source-list li")) {
    node.classList.toggle("active", Number(node.dataset.n) === n);
  }
  $("passage").scrollIntoView({ block: "nearest" });
}

function showPop(n, anchor) {
  const source = sources[n - 1];
  if (!source) return;
  const pop = $("cite-pop");
  const text = String(source.text || "");
  pop.replaceChildren(el("div", { class: "file" }, "[" + n + "] " + fileName(source.path)),
    el("div", { class: "muted" }, whereText(source)), el("pre", {}, text.length > 700 ? text.slice(0, 700) + "…" : text));
  pop.hidden = false;
  const box = anchor.getBoundingClientRect();
  const top = box.bottom + 6 + pop.offsetHeight > window.innerHeight ? box.top - pop.offsetHeight - 6 : box.bottom + 6;
  pop.style.top = Math.max(4, top) + "px";
  pop.style.left = Math.max(4, Math.min(box.left, window.innerWidth - pop.offsetWidth - 8)) + "px";
}

function hidePop() {
  $("cite-pop").hidden = true;
}

function notice(text, kind) {
  setNote($("notice"), text, kind);
}

function describeDone(done) {
  const t = done.timings || {};
  const bits = [];
  if (done.model) bits.push("model " + done.model);
  if (t.ttft_ms !== null && t.ttft_ms !== undefined) bits.push("first token " + Math.round(t.ttft_ms) + " ms");
  if (t.total_ms !== undefined) bits.push("total " + Math.round(t.total_ms) + " ms");
  if (done.usage && done.usage.completion_tokens) bits.push(done.usage.completion_tokens + " tokens");
  if (done.supported_fraction !== undefined && !done.refused) {
    bits.push(Math.round(done.supported_fraction * 100) + "% of checked sentences supported");
  }
  if (done.repaired) bits.push(done.repaired + " citation" + (done.repaired > 1 ? "s" : "") + " repaired");
  return bits.join(" · ");
}

function handle(event, data, state) {
  if (event === "sources") {
    renderSources(data.sources, data.note);
  } else if (event === "evidence") {
    searched(data.query);
    if (!state.text) renderEvidence(data);
  } else if (event === "token") {
    state.text += data.text;
    renderStreaming(state.text);
  } else if (event === "done") {
    state.finished = true;
    renderDone(data);
    renderQuotes(data.quotes, data.quotes_label, citeButton);
    endTurn(data, sources);
  } else if (event === "error") {
    state.finished = true;
    if (data.partial) renderStreaming(data.partial);
    settleEvidence("Failed");
    notice([data.message, data.hint].filter(Boolean).join(" "), "bad");
  }
}

function renderDone(data) {
  renderChecked(data);
  $("meta").textContent = describeDone(data);
  const sentences = data.sentences || [];
  const notes = [];
  if (isWithheld(data)) {
    const checked = sentences.filter((s) => s.checked);
    notes.push((data.left_out || []).length ? say.withheldByCheck
      : say.withheld(checked.filter((s) => s.supported).length, checked.length));
    settleEvidence("Withheld");
  } else if (data.refused) {
    const missing = (data.missing_names || []).map(String).join(", ");
    notes.push(data.refused_before_model ? (missing ? say.refusedMissing(missing) : say.refusedBefore) : say.refusedByModel);
    renderSources([], say.noRelated); // the closest passages were not about it: listing them misleads
    settleEvidence("Refused");
  } else {
    settleEvidence("Answered");
  }
  const unsupported = sentences.filter((s) => s.checked && !s.supported && !s.left_out).length;
  if (unsupported && !data.refused) notes.push(say.unsupported(unsupported));
  const leftOut = (data.left_out || []).length;
  if (leftOut && !data.refused) notes.push(say.leftOut(leftOut));
  if (data.invalid_citations && data.invalid_citations.length) {
    notes.push(say.invalid(data.invalid_citations.map((n) => "[" + n + "]").join(" ")));
  }
  if (data.truncated) notes.push(say.truncated);
  if (data.finish_reason === "repetition") notes.push(say.repetition);
  notice(notes.join(" "), notes.length ? "warn" : "");
}

async function readEvents(response, state) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true }).replace(/\r\n?/g, "\n");
    let cut;
    while ((cut = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      let event = "message";
      const data = [];
      for (const line of block.split("\n")) {
        if (line.startsWith("event:")) event = line.slice(6).trim();
        else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
      }
      if (data.length) handle(event, JSON.parse(data.join("\n")), state);
    }
  }
}

function reset() {
  $("answer").replaceChildren();
  $("answer").classList.add("streaming");
  $("meta").textContent = "";
  $("passage").hidden = true;
  $("evidence").hidden = true;
  $("evidence-list").replaceChildren();
  clearQuotes();
  $("legend").hidden = true;
  $("reader").hidden = true;
  notice("");
}

async function ask(question, retried = false) {
  controller = new AbortController();
  say = words(languageOf(question));
  const state = { text: "", finished: false };
  $("ask").disabled = true;
  $("stop").disabled = false;
  const earlier = history();
  beginTurn(question);
  reset();
  try {
    const response = await fetch("/ask", {
      method: "POST",
      headers: { "Content-Type": "application/json", Accept: "text/event-stream" },
      body: JSON.stringify({
        question,
        ...(earlier.length ? { history: earlier } : {}),
        ...($("ask-source").value ? { source: $("ask-source").value } : {}),
      }),
      signal: controller.signal,
    });
    if (response.status === 401 && !retried && await signIn()) {
      controller = null;
      return ask(question, true);
    }
    if (!response.ok) {
      await failed(response);
      return;
    }
    await readEvents(response, state);
    if (!state.finished) {
      settleEvidence("Failed");
      notice(say.closed, "bad");
    }
  } catch (err) {
    if (err.name === "AbortError") {
      settleEvidence("Stopped");
      notice(say.stopped, "warn");
    } else {
      settleEvidence("Failed");
      notice(say.unreachable, "bad");
    }
  } finally {
    $("answer").classList.remove("streaming");
    $("stop").disabled = true;
    // a finished question leaves the box, unless the person has typed another meanwhile
    if (state.finished && $("question").value.trim() === question) $("question").value = "";
    controller = null;
    checkLength();
  }
}

async function failed(response) {
  let error = { message: "The server answered HTTP " + response.status + "." };
  try {
    const body = await response.json();
    if (body.error) error = body.error;
  } catch (_) { /* not JSON */ }
  if (error.code === "model_unavailable" && error.sources) {
    renderSources(error.sources, error.note);
    renderQuotes(error.quotes, error.quotes_label, citeButton);
    $("answer").classList.add("empty");
    $("answer").textContent = error.sources.length
      ? "No answer is written without a model; the passages this question retrieves are listed under Sources."
      : "No answer is written without a model, and no passage matched the question.";
    if (llm && !llm.configured) setModel(llm); // the notice above says what to do, once
    else notice([error.message, error.hint].filter(Boolean).join(" "), "warn");
    return;
  }
  notice([error.message, error.hint].filter(Boolean).join(" "), "bad");
}
