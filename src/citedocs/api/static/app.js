// citedocs web page: POST /ask, read the server-sent events with fetch + ReadableStream, render citations.
"use strict";

const $ = (id) => document.getElementById(id);
const CITATION = /\[(\d{1,3}(?:\s*[,-]\s*\d{1,3})*)\]/g;
let sources = [];
let controller = null;

function fileName(path) {
  const parts = String(path).replace(/\/+$/, "").split("/");
  return parts[parts.length - 1] || path;
}

function whereText(source) {
  const bits = [];
  if (source.heading) bits.push(source.heading);
  if (source.page !== null && source.page !== undefined) bits.push("page " + source.page);
  else if (source.line_end) bits.push("lines " + source.line_start + "–" + source.line_end);
  return bits.join(" · ");
}

function numbersOf(inner) {
  const out = [];
  for (const part of inner.split(",")) {
    const [a, b] = part.split("-").map((x) => parseInt(x, 10));
    if (Number.isNaN(a)) continue;
    if (!Number.isNaN(b) && b >= a && b - a <= 50) for (let n = a; n <= b; n++) out.push(n);
    else out.push(a);
  }
  return out;
}

// Text with [n] markers turned into buttons; built with DOM nodes, never innerHTML.
function renderAnswer(text, invalid) {
  const box = $("answer");
  box.replaceChildren();
  box.classList.remove("empty");
  let last = 0;
  for (const match of text.matchAll(CITATION)) {
    box.append(document.createTextNode(text.slice(last, match.index)));
    for (const n of numbersOf(match[1])) {
      const button = document.createElement("button");
      button.type = "button";
      button.className = "cite";
      button.textContent = n;
      button.dataset.n = n;
      if (n < 1 || n > sources.length || (invalid && invalid.includes(n))) {
        button.classList.add("invalid");
        button.title = "Source [" + n + "] does not exist: the model invented this citation.";
      } else {
        button.title = fileName(sources[n - 1].path) + " — " + whereText(sources[n - 1]);
        button.addEventListener("click", () => showPassage(n));
      }
      box.append(button);
    }
    last = match.index + match[0].length;
  }
  box.append(document.createTextNode(text.slice(last)));
}

function renderSources() {
  const list = $("source-list");
  list.replaceChildren();
  if (!sources.length) {
    const li = document.createElement("li");
    li.className = "empty";
    li.textContent = "No passage matched.";
    list.append(li);
    return;
  }
  for (const source of sources) {
    const li = document.createElement("li");
    li.dataset.n = source.n;
    const button = document.createElement("button");
    button.type = "button";
    const num = document.createElement("span");
    num.className = "num";
    num.textContent = "[" + source.n + "]";
    const where = document.createElement("span");
    where.className = "where";
    where.textContent = whereText(source);
    button.append(num, document.createTextNode(fileName(source.path)), where);
    button.addEventListener("click", () => showPassage(source.n));
    li.append(button);
    list.append(li);
  }
}

function showPassage(n) {
  const source = sources[n - 1];
  if (!source) return;
  $("passage").hidden = false;
  $("passage-file").textContent = "[" + n + "] " + source.path;
  $("passage-loc").textContent = whereText(source) + (source.source ? " · from " + source.source : "");
  $("passage-text").textContent = source.text;
  for (const el of document.querySelectorAll(".cite, #source-list li")) {
    el.classList.toggle("active", Number(el.dataset.n) === n);
  }
  $("passage").scrollIntoView({ block: "nearest", behavior: "smooth" });
}

function notice(text, kind) {
  const box = $("notice");
  box.className = "note" + (kind ? " " + kind : "");
  box.textContent = text || "";
}

function describeDone(done) {
  const t = done.timings || {};
  const bits = [];
  if (t.ttft_ms !== null && t.ttft_ms !== undefined) bits.push("first token " + Math.round(t.ttft_ms) + " ms");
  if (t.total_ms !== undefined) bits.push("total " + Math.round(t.total_ms) + " ms");
  if (done.usage && done.usage.completion_tokens) bits.push(done.usage.completion_tokens + " tokens");
  if (done.citations && done.citations.length) bits.push("cites " + done.citations.map((n) => "[" + n + "]").join(""));
  if (done.supported_fraction !== undefined && !done.refused) {
    bits.push(Math.round(done.supported_fraction * 100) + "% of sentences supported");
  }
  return bits.join(" · ");
}

function handle(event, data, state) {
  if (event === "sources") {
    sources = data.sources || [];
    renderSources();
  } else if (event === "token") {
    state.text += data.text;
    renderAnswer(state.text);
  } else if (event === "done") {
    state.finished = true;
    renderAnswer(data.answer, data.invalid_citations);
    $("meta").textContent = describeDone(data);
    const notes = [];
    if (data.refused) notes.push(data.refusal_reason || "The sources do not contain the answer.");
    if (data.invalid_citations && data.invalid_citations.length) {
      notes.push("Removed citations to sources that do not exist: " +
                 data.invalid_citations.map((n) => "[" + n + "]").join(" ") + ".");
    }
    if (data.truncated) notes.push("The answer was cut at the token limit.");
    notice(notes.join(" "), notes.length ? "warn" : "");
  } else if (event === "error") {
    state.finished = true;
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

async function ask(question) {
  controller = new AbortController();
  const state = { text: "", finished: false };
  $("ask").disabled = true;
  $("stop").disabled = false;
  $("answer").classList.add("streaming");
  $("answer").textContent = "";
  $("meta").textContent = "";
  $("passage").hidden = true;
  notice("");
  try {
    const response = await fetch("/ask", {
      method: "POST",
      headers: { "Content-Type": "application/json", Accept: "text/event-stream" },
      body: JSON.stringify({ question }),
      signal: controller.signal,
    });
    if (!response.ok) {
      let message = "The server answered HTTP " + response.status + ".";
      try {
        const body = await response.json();
        if (body.error) message = body.error.message + " " + (body.error.hint || "");
      } catch (_) { /* not JSON */ }
      notice(message, "bad");
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
    controller = null;
  }
}

$("form").addEventListener("submit", (event) => {
  event.preventDefault();
  const question = $("question").value.trim();
  if (question && !controller) ask(question);
});
$("question").addEventListener("keydown", (event) => {
  if (event.key === "Enter" && !event.shiftKey) {
    event.preventDefault();
    $("form").requestSubmit();
  }
});
$("stop").addEventListener("click", () => controller && controller.abort());

// Which model answers (GET /stats `model`): shown under the title, refreshed while a local model loads.
async function showModel() {
  try {
    const model = (await (await fetch("/stats")).json()).model || {};
    const loading = ["starting", "restarting"].includes(model.state);
    $("model").textContent = !model.name
      ? "No language model: search works; run `citedocs model install` for answers."
      : "Answers by " + model.name + (loading ? " (loading…)" : model.state === "failed" ? " (failed to start)" : "");
    if (loading) setTimeout(showModel, 3000);
  } catch (_) { /* the page still works without it */ }
}
showModel();
