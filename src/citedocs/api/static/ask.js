// Ask: POST /ask as server-sent events (sources, evidence?, token*, done | error), read with fetch streams.
// After `done`, the answer is drawn from `done.sentences`: each sentence with the citations the checker
// kept, and the ones no passage supports marked "unverified".
import { $, el, fileName, setNote, whereText } from "./dom.js";
import { openInContext } from "./reader.js";
import { beginTurn, endTurn, history, initThread, searched } from "./thread.js";

const CITATION = /\s*\[(?:(?:sources?|refs?|ref\.)\s*)?(\d{1,4}(?:\s*(?:,|-|–|and)\s*\d{1,4})*)\]/gi;
const UNVERIFIED = /\s*\[unverified\]/gi;
const TRAILING = /[.!?:;]*["')”’*_]*$/;
let sources = [];
let controller = null;
let llm = null; // the status route's llm object
let noModelShown = false;

export function initAsk() {
  initThread();
  $("ask-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const question = $("question").value.trim();
    if (question && !controller) ask(question);
  });
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
      "the passages each question retrieves, and search works. Set one up (CITEDOCS_LLM_BASE_URL for Ollama, ",
      "llama.cpp, vLLM or a hosted API; or CITEDOCS_LLM_GGUF): ",
      el("a", { href: "/help/models", target: "_blank", rel: "noopener" }, "docs/models.md"), ".");
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

// Raw text with [n] markers as buttons (while streaming, before the check).
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

function renderStreaming(text) {
  const box = $("answer");
  box.classList.remove("empty");
  box.replaceChildren(...withCitations(text));
}

// The checked answer, sentence by sentence (as answer/citations.py repairs it), each marked by its verdict.
function renderChecked(done) {
  const box = $("answer");
  box.classList.remove("empty");
  const raw = done.raw_answer || "";
  const sentences = done.sentences || [];
  if (done.refused && done.refusal_reason && !done.refused_before_model && raw && sentences.length) {
    // Withheld: the model answered but its sources hold too little of it; its words stay one click away.
    const shown = el("details", { class: "withheld" },
      el("summary", {}, "What the model wrote (withheld: not supported by the sources)"),
      el("div", {}, ...checkedSentences(raw, sentences)));
    box.replaceChildren(...withCitations(done.answer || ""), shown);
    return;
  }
  if (done.refused || !raw || !sentences.length) {
    box.replaceChildren(...withCitations(done.answer || "", done.invalid_citations));
    return;
  }
  box.replaceChildren(...checkedSentences(raw, sentences));
  $("legend").hidden = !sentences.some((s) => s.checked);
}

function checkedSentences(raw, sentences) {
  const out = [];
  let last = 0;
  for (const s of sentences) {
    if (s.start > last) out.push(document.createTextNode(raw.slice(last, s.start)));
    const text = raw.slice(s.start, s.end);
    last = s.end;
    if (s.kind === "code") {
      out.push(document.createTextNode(text));
      continue;
    }
    const numbers = s.supported ? s.supported_by : s.cited.filter((n) => n >= 1 && n <= sources.length);
    const bare = text.replace(CITATION, "").replace(UNVERIFIED, "").replace(/\s+$/, "");
    const cut = bare.search(TRAILING);
    const kind = !s.checked ? "sent" : s.supported ? "sent ok" : "sent unsupported";
    const span = el("span", { class: kind, dataset: { support: s.support } }, bare.slice(0, cut));
    for (const n of numbers) span.append(" ", citeButton(n));
    if (!s.supported) {
      span.append(" ", el("span", { class: "badge bad", title: "No passage holds this sentence's content " +
        "(support " + Math.round(s.support * 100) + "%): check it before you rely on it." }, "unverified"));
    }
    span.append(bare.slice(cut));
    span.title = s.checked ? (s.supported ? "Supported by " + numbers.map((n) => "[" + n + "]").join("") +
      " (" + Math.round(s.support * 100) + "% of its content)" : "Not supported by the sources") : "";
    out.push(span);
  }
  if (last < raw.length) out.push(...withCitations(raw.slice(last).replace(UNVERIFIED, "")));
  return out;
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
      el("span", { class: "where" }, whereText(s) || s.path)))));
}

function renderEvidence(data) {
  const box = $("evidence");
  const items = (data && (data.evidence || data.sentences)) || [];
  if (!items.length && !(data && data.note)) return;
  box.hidden = false;
  box.replaceChildren(el("div", { class: "small muted" }, data.note || "The passages' best sentences for this question:"),
    el("ol", {}, ...items.map((s) => el("li", {}, s.text || "", " ",
      s.n ? citeButton(s.n) : "", s.path ? el("span", { class: "small muted" }, " " + fileName(s.path) +
        (s.line_start ? ":" + s.line_start : "")) : ""))));
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
    renderChecked(data);
    endTurn(data, sources);
    $("meta").textContent = describeDone(data);
    const notes = [];
    if (data.refused) {
      notes.push(data.refused_before_model
        ? "Refused before asking the model: " + (data.refusal_reason || "no passage covers the question") + "."
        : data.refusal_reason ? "Withheld: " + data.refusal_reason + "."
        : "The model found that the passages do not contain the answer.");
    }
    const unsupported = (data.sentences || []).filter((s) => s.checked && !s.supported).length;
    if (unsupported && !data.refused) notes.push(unsupported + " sentence" + (unsupported > 1 ? "s are" : " is") + " not supported by the sources (marked unverified).");
    if (data.invalid_citations && data.invalid_citations.length) {
      notes.push("Removed citations to sources that do not exist: " + data.invalid_citations.map((n) => "[" + n + "]").join(" ") + ".");
    }
    if (data.truncated) notes.push("The answer was cut at the token limit (CITEDOCS_LLM_MAX_TOKENS).");
    if (data.finish_reason === "repetition") notes.push("The model began repeating itself, so it was stopped; the answer keeps one copy (CITEDOCS_ANSWER_STOP_REPEATS).");
    notice(notes.join(" "), notes.length ? "warn" : "");
  } else if (event === "error") {
    state.finished = true;
    if (data.partial) renderStreaming(data.partial);
    notice(data.message + (data.hint ? " " + data.hint : ""), "bad");
  }
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
  $("legend").hidden = true;
  $("reader").hidden = true;
  notice("");
}

async function ask(question) {
  controller = new AbortController();
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
      body: JSON.stringify(earlier.length ? { question, history: earlier } : { question }),
      signal: controller.signal,
    });
    if (!response.ok) {
      await failed(response);
      return;
    }
    await readEvents(response, state);
    if (!state.finished) notice("The connection closed before the answer finished. Try again.", "bad");
  } catch (err) {
    if (err.name === "AbortError") notice("Stopped.", "warn");
    else notice("Could not reach the server: " + err.message + ". Check that `citedocs serve` is running.", "bad");
  } finally {
    $("answer").classList.remove("streaming");
    $("ask").disabled = false;
    $("stop").disabled = true;
    if (state.finished) $("question").value = "";
    controller = null;
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
    $("answer").classList.add("empty");
    $("answer").textContent = error.sources.length
      ? "No answer is written without a model; the passages this question retrieves are listed under Sources."
      : "No answer is written without a model, and no passage matched the question.";
    if (llm && !llm.configured) setModel(llm); // the notice above says what to do, once
    else notice(error.message + " " + (error.hint || ""), "warn");
    return;
  }
  notice(error.message + " " + (error.hint || ""), "bad");
}
