// Quotes: the source sentences under the answer (done.quotes), verbatim, each with its source number and
// place. They are the second part of an answer, kept apart from the model's synthesis: a <blockquote> per
// quote, under "Also in the sources", or, when there is no synthesis (withheld, refused, no model), under
// done.quotes_label ("What the sources say") as the answer itself. Text is set as text, never as HTML.
import { $, el, fileName } from "./dom.js";

function place(quote) {
  if (quote.url) return quote.url;
  const name = fileName(quote.path);
  if (quote.page !== null && quote.page !== undefined) return name + ", page " + quote.page;
  return quote.line ? name + ":" + quote.line : name;
}

// `cite(n)`: the citation button the answer uses, so a quote's [n] opens the same passage.
export function renderQuotes(quotes, label, cite) {
  const box = $("quotes");
  const list = quotes || [];
  box.classList.toggle("alone", Boolean(label));
  if (!list.length) {
    box.hidden = true;
    box.replaceChildren();
    return;
  }
  box.hidden = false;
  box.replaceChildren(
    el("h3", {}, label || "Also in the sources (quoted verbatim)"),
    ...list.map((q) => el("figure", { class: "quote", dataset: { n: q.n } },
      el("blockquote", { text: q.text }),
      el("figcaption", { class: "small muted" }, cite(q.n), " " + place(q)))),
  );
}

export function clearQuotes() {
  renderQuotes([], null, () => "");
}
