// A docs page (GET /help/NAME, Markdown) drawn with the page's safe Markdown: /static/help.html#models.
import { $, el } from "./dom.js";
import { renderMarkdown } from "./markdown.js";

const PAGES = ["models", "web", "troubleshooting"];

// Links between docs pages go to their help page; other relative links keep only their words.
function linked(text) {
  return text.replace(/\[([^\]\n]+)\]\(([^()\s]+)\)/g, (all, label, href) => {
    if (/^https?:/i.test(href)) return all;
    const name = href.replace(/^\.\//, "").replace(/\.md(#.*)?$/, "");
    return PAGES.includes(name) ? "[" + label + "](" + location.origin + "/static/help.html#" + name + ")" : label;
  });
}

async function show() {
  const name = location.hash.slice(1) || "models";
  const box = $("help");
  let response;
  try {
    response = await fetch("/help/" + encodeURIComponent(name), { headers: { Accept: "text/markdown" } });
  } catch (_) {
    box.replaceChildren("Could not reach the server. Check that `citedocs serve` is running, then reload.");
    return;
  }
  if (!response.ok) {
    box.replaceChildren(el("p", {}, "This help page is not installed with this copy of citedocs. Read docs/" + name +
      ".md in the citedocs source repository."));
    return;
  }
  const text = await response.text();
  box.replaceChildren(...renderMarkdown(linked(text)));
  const title = box.querySelector(".md-h");
  document.title = "citedocs — " + (title ? title.textContent : name);
}

window.addEventListener("hashchange", show);
show();
