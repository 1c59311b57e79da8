// Small helpers shared by the page's modules. Text always goes in as text nodes, never as HTML.

export const $ = (id) => document.getElementById(id);

// el("li", {class: "hit", dataset: {n: 1}, onclick: fn}, child, "text", ...)
export function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "dataset") Object.assign(node.dataset, value);
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else if (key === "text") node.textContent = value;
    else node.setAttribute(key, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

export class ApiFailure extends Error {
  constructor(status, error) {
    super(error.message || "HTTP " + status);
    this.status = status;
    this.error = error;
  }
  get text() {
    return [this.error.message, this.error.hint].filter(Boolean).join(" ");
  }
}

// A shared server (CITEDOCS_AUTH=tokens) answers 401 until the page holds a session: ask for a token once,
// trade it for an HttpOnly session cookie, and tell the caller to try again. The token is not kept by the page.
let signingIn = null;
export function signIn() {
  if (!signingIn) {
    signingIn = (async () => {
      const token = window.prompt("This citedocs server needs a token. Paste the token an administrator gave you (citedocs token create):");
      if (!token) return false;
      const response = await fetch("/auth/session", {
        method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ token: token.trim() }),
      });
      return response.ok;
    })().finally(() => { signingIn = null; });
  }
  return signingIn;
}

// JSON from a route; an error envelope becomes an ApiFailure whose text says what to do next.
export async function api(path, options = {}, retried = false) {
  const init = { headers: { Accept: "application/json" }, ...options };
  if (options.json !== undefined) {
    init.method = init.method || "POST";
    init.headers = { ...init.headers, "Content-Type": "application/json" };
    init.body = JSON.stringify(options.json);
    delete init.json;
  }
  let response;
  try {
    response = await fetch(path, init);
  } catch (err) {
    if (err.name === "AbortError") throw err;
    throw new ApiFailure(0, { message: "Could not reach the server.", hint: "Check that `citedocs serve` is running." });
  }
  let body = null;
  try { body = await response.json(); } catch (_) { body = null; }
  if (response.status === 401 && !retried && await signIn()) return api(path, options, true);
  if (!response.ok) {
    const error = (body && body.error) || { message: "The server answered HTTP " + response.status + "." };
    throw new ApiFailure(response.status, error);
  }
  return body;
}

export function fileName(path) {
  const parts = String(path).replace(/\/+$/, "").split("/");
  return parts[parts.length - 1] || path;
}

export function dirName(path) {
  const text = String(path);
  const cut = text.replace(/\/+$/, "").lastIndexOf("/");
  return cut > 0 ? text.slice(0, cut + 1) : "";
}

// A file's path under its folder (what a card shows; the full path stays in the reader and "Copy path:line").
export function relativePath(path, folder) {
  const root = String(folder || "").replace(/\/+$/, "");
  const text = String(path);
  return root && text.startsWith(root + "/") ? text.slice(root.length + 1) : text;
}

export function lineSpan(hit) {
  if (!hit.line_start) return "";
  return hit.line_end && hit.line_end !== hit.line_start ? hit.line_start + "–" + hit.line_end : String(hit.line_start);
}

export function whereText(hit) {
  const bits = [];
  if (hit.heading) bits.push(hit.heading);
  if (hit.page !== null && hit.page !== undefined) bits.push("page " + hit.page);
  if (hit.line_start) bits.push("lines " + lineSpan(hit));
  return bits.join(" · ");
}

// The reference a person pastes into `citedocs read` or an editor: path:start-end.
export function reference(hit) {
  if (!hit.line_start) return hit.path;
  const end = hit.line_end && hit.line_end !== hit.line_start ? "-" + hit.line_end : "";
  return hit.path + ":" + hit.line_start + end;
}

// A snippet's **matches** as <mark> elements.
export function snippetNodes(snippet) {
  const out = [];
  String(snippet || "").split("**").forEach((part, i) => {
    if (!part) return;
    out.push(i % 2 ? el("mark", {}, part) : document.createTextNode(part));
  });
  return out;
}

export function ago(epoch) {
  if (!epoch) return "never";
  const s = Math.max(0, Date.now() / 1000 - epoch);
  if (s < 60) return Math.round(s) + " s ago";
  if (s < 3600) return Math.round(s / 60) + " min ago";
  if (s < 86400) return Math.round(s / 3600) + " h ago";
  return new Date(epoch * 1000).toLocaleDateString();
}

export function bytes(n) {
  if (n === null || n === undefined) return "—";
  if (n < 1024) return n + " B";
  if (n < 1048576) return (n / 1024).toFixed(1) + " KB";
  return (n / 1048576).toFixed(1) + " MB";
}

export function debounce(fn, ms) {
  let timer = null;
  return (...args) => {
    clearTimeout(timer);
    timer = setTimeout(() => fn(...args), ms);
  };
}

export async function copyText(text) {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch (_) {
    const area = el("textarea", { class: "sr" }, text);
    document.body.append(area);
    area.select();
    const ok = document.execCommand("copy");
    area.remove();
    return ok;
  }
}

export function setNote(node, text, kind) {
  node.className = "note" + (kind ? " " + kind : "");
  node.replaceChildren(...(Array.isArray(text) ? text : [text || ""]));
}
