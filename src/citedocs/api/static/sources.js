// Sources: registered folders and sites (GET /sources), their failed files, changes when the server allows
// them, and the progress of indexing and embedding (GET /jobs, polled quickly while something runs).
import { $, ago, api, el, setNote } from "./dom.js";

const FAST_MS = 400;
const SLOW_MS = 5000;
let writable = false;
let pollTimer = null;
let wasActive = false;
let lastSignature = "";
let onChange = () => {};

export function initSources(changed) {
  onChange = changed;
  $("add-folder").addEventListener("submit", async (event) => {
    event.preventDefault();
    const path = $("folder-path").value.trim();
    if (!path) return;
    await change("Adding " + path + "…", () => api("/sources", { json: { path } }), (body) =>
      "Registered " + body.source.uri + "; indexing runs in the background.");
    $("folder-path").value = "";
  });
  $("add-site").addEventListener("submit", async (event) => {
    event.preventDefault();
    const name = $("site-name").value.trim();
    const url = $("site-url").value.trim();
    await change("Fetching " + url + "…", () => api("/sites", { json: { name, url } }), (body) =>
      "Added site " + body.source.name + ": " + body.source.docs + " pages listed.");
  });
}

async function change(pending, call, done) {
  setNote($("sources-note"), pending);
  try {
    const body = await call();
    setNote($("sources-note"), done(body), "");
  } catch (err) {
    setNote($("sources-note"), err.text || String(err), "bad");
  }
  await loadSources();
  pollJobs(true);
}

export async function loadSources() {
  let body;
  try {
    body = await api("/sources");
  } catch (err) {
    setNote($("sources-note"), err.text, "bad");
    return null;
  }
  writable = body.writable;
  const note = $("readonly-note");
  note.hidden = writable;
  note.textContent = writable ? "" : body.read_only_reason + " Sources are listed; adding, removing and reindexing are off.";
  for (const input of document.querySelectorAll("#add-folder input, #add-folder button, #add-site input, #add-site button")) {
    input.disabled = !writable;
  }
  renderCards(body.sources);
  onChange(body);
  return body;
}

function renderCards(sources) {
  const list = $("source-cards");
  if (!sources.length) {
    list.replaceChildren(el("li", { class: "card empty" }, "Nothing is registered yet." +
      (writable ? " Add a folder above (or run `citedocs add PATH`)." : " Run `citedocs add PATH` on the server.")));
    return;
  }
  list.replaceChildren(...sources.map(card));
}

function statusBadge(status) {
  const kind = { ready: "ok", indexing: "warn", error: "bad", interrupted: "warn" }[status] || "";
  return el("span", { class: "badge " + kind }, status);
}

function card(source) {
  const name = source.kind === "site" ? source.name : source.uri;
  const actions = el("div", { class: "actions" });
  if (writable) {
    const verb = source.kind === "site" ? "Refresh" : "Reindex";
    actions.append(el("button", { type: "button", class: "ghost", onclick: () => change(verb + "ing " + name + "…",
      () => api("/sources/reindex", { json: { name } }), () => verb + (source.kind === "site" ? "ed " : "ing ") + name + ".") }, verb));
    const remove = el("button", { type: "button", class: "ghost danger" }, "Remove");
    remove.addEventListener("click", () => {
      if (remove.dataset.confirm) {
        change("Removing " + name + "…", () => api("/sources/remove", { json: { name } }), () =>
          "Removed " + name + " from the index (its files are untouched).");
        return;
      }
      remove.dataset.confirm = "1";
      remove.textContent = "Confirm remove";
      setTimeout(() => { delete remove.dataset.confirm; remove.textContent = "Remove"; }, 4000);
    });
    actions.append(remove);
  }
  const failures = source.failures || [];
  const details = failures.length || source.failed ? el("details", { class: "failed-files" },
    el("summary", {}, source.failed + " file" + (source.failed === 1 ? "" : "s") + " failed — why"),
    el("ul", { class: "failures" }, ...failures.map((f) => el("li", {}, el("span", { class: "path" }, f.path), ": ",
      el("span", { class: "reason" }, f.reason || "no reason recorded"))),
      failures.length < source.failed ? el("li", { class: "muted" }, "… more in `citedocs status --json`.") : "")) : "";
  return el("li", { class: "card source-card", dataset: { name } },
    el("div", { class: "head" },
      el("div", {}, el("span", { class: "badge" }, source.kind), " ", el("span", { class: "name" }, name),
        source.kind === "site" ? el("div", { class: "small muted" }, source.uri) : ""),
      actions),
    el("div", { class: "counts" }, statusBadge(source.status), " ", source.docs + " docs · " + source.chunks + " chunks · " +
      source.failed + " failed · last indexed " + ago(source.last_indexed)),
    source.last_error ? el("div", { class: "note bad" }, source.last_error) : "",
    details);
}

function jobLine(job) {
  const label = job.kind === "embed" ? "embedding" : "indexing";
  const total = job.total || 0;
  const bar = el("progress", { max: total || 1, value: total ? job.done : 0, "aria-label": label });
  if (!total && job.state === "running") bar.removeAttribute("value");
  const text = (total ? job.done + "/" + total : job.done + "") + " " + job.state +
    (job.failed ? " · " + job.failed + " failed" : "") + (job.current ? " · " + job.current : "") +
    (job.message && job.state !== "running" ? " · " + job.message : "");
  return el("div", { class: "job", dataset: { kind: job.kind, state: job.state } }, el("strong", {}, label), bar, text);
}

export async function pollJobs(soon) {
  clearTimeout(pollTimer);
  if (soon) wasActive = true;
  let body = null;
  try {
    body = await api("/jobs");
  } catch (_) { /* the status pill says the server is gone */ }
  if (body) renderJobs(body);
  const active = Boolean(body && body.active);
  // A job that starts or ends changes a source's status and counts: reload them then, not on every poll.
  const signature = body ? body.jobs.map((j) => j.id + j.state).join() : lastSignature;
  if ((wasActive && !active) || (active && signature !== lastSignature)) await loadSources();
  lastSignature = signature;
  wasActive = active;
  pollTimer = setTimeout(() => pollJobs(false), active || soon ? FAST_MS : SLOW_MS);
}

function renderJobs(body) {
  const running = body.jobs.filter((j) => j.state === "running");
  const shown = body.active ? (running.length ? running : body.jobs.slice(0, 1)) : body.jobs.slice(0, 2);
  $("jobs").replaceChildren(...(body.active ? [] : shown.map(jobLine))); // while active, the bar above shows them
  $("jobs").dataset.active = body.active ? "1" : "";
  const bar = $("jobs-bar");
  bar.hidden = !body.active;
  if (body.active) {
    const e = body.embedder || {};
    bar.replaceChildren(...(running.length ? running : shown).map(jobLine),
      e.chunks ? el("div", { class: "small muted" }, e.vectors + "/" + e.chunks + " chunks have vectors; search answers meanwhile.") : "");
  }
}
