// The Ask tab as a conversation: earlier turns shown above the current answer, each with its own checked
// citations and sources; follow-ups send them as `history` to POST /ask (docs/conversations.md).
// ask.js calls beginTurn/endTurn around each answer and history() for the request body.
import { $, el, fileName, whereText } from "./dom.js";
import { openInContext } from "./reader.js";

// The server's bounds on a history (GET /status `conversation`, from answer/conversation.py): older turns are
// left out, and the page says so. Until /status is read, no bound is known and a question is sent alone.
let bounds = { max_turns: 0, max_history_chars: 0 };
let turns = []; // {question, answer, node}
let dropped = 0;
let pending = null;

export function setBounds(conversation) {
  if (conversation) bounds = conversation;
}

export function initThread() {
  $("new-conversation").addEventListener("click", startOver);
}

// Earlier turns as POST /ask's `history`: the oldest left out until it fits the bounds (the note says so).
export function history() {
  const out = turns.flatMap((t) => [{ role: "user", content: t.question }, { role: "assistant", content: t.answer }]);
  let cut = 0;
  const chars = () => out.slice(cut).reduce((n, t) => n + t.content.length, 0);
  while (cut < out.length && (out.length - cut > bounds.max_turns || chars() > bounds.max_history_chars)) cut += 2;
  if (cut / 2 > dropped) dropped = cut / 2;
  return out.slice(cut);
}

// Before a question is sent: the previous answer moves into the thread, the question is shown.
export function beginTurn(question) {
  if (pending && pending.done) archive(pending);
  pending = { question, done: null, sources: [], query: null };
  $("current-question").hidden = false;
  $("current-question").textContent = question;
}

// The `evidence` event's `query`: what retrieval searched for this turn (its rewrite, for a follow-up).
export function searched(query) {
  if (pending) pending.query = query || null;
}

// After `done`: this turn can be followed up.
export function endTurn(done, sources) {
  if (!pending) return;
  pending.done = done;
  pending.sources = sources || [];
  turns.push({ question: pending.question, answer: String(done.answer || "") });
  $("new-conversation").hidden = false;
  const rewrite = pending.query && pending.query.rewrite;
  $("thread-note").hidden = !rewrite && !dropped;
  $("thread-note").textContent = [
    rewrite ? "Searched with the conversation: “" + rewrite + "”." : "",
    dropped ? "The " + dropped + " oldest question" + (dropped > 1 ? "s are" : " is") + " no longer sent (the conversation is long); start over for a new topic." : "",
  ].filter(Boolean).join(" ");
}

// The finished answer's nodes, moved (not copied) into a thread entry; its citations open ITS sources.
function archive(turn) {
  const own = turn.sources;
  const answer = el("div", { class: "answer" });
  answer.append(...Array.from($("answer").childNodes));
  for (const button of answer.querySelectorAll(".cite")) {
    const n = Number(button.dataset.n);
    const fresh = button.cloneNode(true); // drops the listeners bound to the current turn's sources
    fresh.classList.remove("active");
    const source = own[n - 1];
    if (source) {
      fresh.title = "[" + n + "] " + fileName(source.path) + " · " + whereText(source);
      fresh.addEventListener("click", () => openInContext(source, $("sources")));
    }
    button.replaceWith(fresh);
  }
  const list = el("ol", { class: "source-list small" }, ...own.filter((s) => turn.done.citations && turn.done.citations.includes(s.n))
    .map((s) => el("li", { dataset: { n: s.n } }, el("span", { class: "num" }, "[" + s.n + "]"), " " + fileName(s.path),
      el("span", { class: "where" }, " " + (whereText(s) || s.path)))));
  const entry = el("div", { class: "turn" }, el("div", { class: "turn-q" }, turn.question), answer, list);
  $("thread").append(entry);
  $("thread").hidden = false;
}

function startOver() {
  if (!$("stop").disabled) $("stop").click(); // an answer still streaming belongs to the old conversation
  turns = [];
  dropped = 0;
  pending = null;
  $("thread").replaceChildren();
  $("thread").hidden = true;
  $("thread-note").hidden = true;
  $("current-question").hidden = true;
  $("new-conversation").hidden = true;
  $("answer").replaceChildren("Ask a question to get a cited answer.");
  $("answer").classList.add("empty");
  $("meta").textContent = "";
  $("notice").textContent = "";
  $("question").focus();
}
