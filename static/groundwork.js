// What every page script shares: JSON requests with the API's headers, live sockets, server-rendered
// fragments and forms, and the source dialog. No HTML is built here: it comes rendered from the
// server (Django's autoescaping), and the little text script sets goes in with textContent.
const csrf = document.querySelector('meta[name="csrf-token"]').content;
export const $ = (id) => document.getElementById(id);
// The session a session page shows (undefined on other pages).
export const sessionId = document.querySelector("[data-session-id]")?.dataset.sessionId;

export class ApiError extends Error {
  constructor(status, body) {
    super((body && body.error) || `request failed (${status})`);
    this.status = status;
  }
}

// Every mutation carries the CSRF token and a fresh Idempotency-Key (SPEC §2.6).
export function mutationHeaders(extra) {
  const key = crypto.randomUUID ? crypto.randomUUID() : String(Date.now()) + Math.random();
  return Object.assign({ "X-CSRFToken": csrf, "Idempotency-Key": key }, extra);
}

export async function requestJson(method, path, { body, headers } = {}) {
  const options = { method, headers: { Accept: "application/json" } };
  if (method !== "GET") {
    Object.assign(options.headers, mutationHeaders(headers), body === undefined ? {} : { "Content-Type": "application/json" });
    options.body = body === undefined ? undefined : JSON.stringify(body);
  }
  const response = await fetch(path, options);
  const data = await response.json().catch(() => null);
  if (!response.ok) throw new ApiError(response.status, data);
  return data;
}

// The server-rendered fragments a GET of `path` answers, given to `show` (swapped in) unless a later
// load with the same `key` started meanwhile: the reader's later choice wins over an earlier answer.
const latest = {};
export async function load(path, key = path, show = swapFragments) {
  const ticket = (latest[key] = (latest[key] || 0) + 1);
  const response = await fetch(path);
  const html = response.ok ? await response.text() : null;
  if (ticket !== latest[key]) return false;
  if (!response.ok) throw new ApiError(response.status, null);
  show(html);
  return true;
}

export function scrollToHighlight(container) {
  const target = container.querySelector(".preview-span.highlight");
  if (!target) return;
  // Only the nearest scroller moves (the source dialog's text: its title and Close, and the page around it,
  // stay where they are). A run of rows taller than the view starts at its top (its column names).
  target.scrollIntoView({ block: target.offsetHeight > container.clientHeight ? "start" : "center", container: "nearest" });
  target.focus({ preventScroll: true });
}

// A websocket that comes back after a drop, with growing pauses. `path` may be a function: asked
// again at each connect (a pane's socket names what the page shows then).
export function liveSocket(path, { onMessage, onState }) {
  let delay = 500;
  let closed = false;
  let socket;
  function connect() {
    const scheme = location.protocol === "https:" ? "wss" : "ws";
    socket = new WebSocket(`${scheme}://${location.host}${typeof path === "function" ? path() : path}`);
    socket.onopen = () => { delay = 500; onState("connected"); };
    socket.onmessage = (event) => onMessage(JSON.parse(event.data));
    socket.onclose = () => {
      onState("disconnected");
      if (closed) return;
      setTimeout(connect, delay);
      delay = Math.min(delay * 2, 10000);
    };
  }
  connect();
  return { close() { closed = true; socket.close(); } };
}

// --- the source dialog ---------------------------------------------------------------
// `heading` at once, then the server-rendered title, provenance and spans `path` answers
// (context/_source.html's fragments), the highlighted span in view. A citation opens its exact
// version (/sources/{version}/{span}/), never a file by name: a newer upload of that name is other text.
export async function openSource(heading, path, gone) {
  const spans = $("source-dialog-spans");
  $("source-dialog-title").textContent = heading;
  $("source-dialog-meta").replaceChildren();
  spans.replaceChildren($("source-loading-template").content.cloneNode(true));
  if (!$("source-dialog").open) $("source-dialog").showModal();
  try {
    if (await load(path, "source-dialog")) scrollToHighlight(spans);
  } catch (error) {
    const failed = $("source-failed-template").content.cloneNode(true);
    failed.firstElementChild.textContent = error.status === 404 ? gone : error.message;
    spans.replaceChildren(failed);
  }
}

// A citation's data attributes ({source, version, span}: a chip, a report's [n]) in the dialog.
function openCitation({ source, version, span }) {
  const query = new URLSearchParams({ fragment: "", session: sessionId || "" });
  const path = `/sources/${encodeURIComponent(version)}/${encodeURIComponent(span)}/?${query}`;
  return openSource(source ? source.replace("::", " · ") : "Source", path, "This source is no longer available.");
}

// --- server-rendered fragments and forms ---------------------------------------------
// A live fragment (HTML a consumer rendered from the page's own partials) is a list of
// containers named by id; each one's children take the place of the shown container's.
// A child whose id and markup are unchanged stays the same node (what is typed into it and
// the focus stay); a changed one takes over what was typed into its fields (by id).
// Children the page made itself ([data-client-only], a streamed draft) stay at the end.
// A container marked data-swap="append" brings only new children: those whose id is not shown yet
// are added at its end (a run's next thought-stream lines).
export function swapFragments(html) {
  const parsed = document.createElement("template");
  parsed.innerHTML = html;
  // The outermost elements with an id; a wrapper without one is looked through (a table's body
  // travels inside a <table>: the parser drops a <tbody> anywhere else).
  for (const fresh of parsed.content.querySelectorAll("[id]")) {
    if (fresh.parentElement && fresh.parentElement.closest("[id]")) continue;
    const shown = $(fresh.id);
    if (shown && fresh.dataset.swap === "append") {
      for (const child of [...fresh.children]) if (!child.id || !$(child.id)) shown.append(child);
    } else if (shown) swapChildren(shown, fresh);
  }
}

function swapChildren(shown, fresh) {
  if (!fresh.children.length) {
    if (shown.textContent !== fresh.textContent) shown.textContent = fresh.textContent;
    return;
  }
  const byId = new Map([...shown.children].filter((child) => child.id).map((child) => [child.id, child]));
  const next = [...fresh.children].map((child) => {
    const old = child.id && byId.get(child.id);
    if (!old) return child;
    if (old.isEqualNode(child)) return old;
    carryTyped(old, child);
    return child;
  });
  next.push(...[...shown.children].filter((child) => child.hasAttribute("data-client-only")));
  const focused = shown.contains(document.activeElement) ? document.activeElement.id : "";
  next.forEach((child, i) => { if (shown.children[i] !== child) shown.insertBefore(child, shown.children[i] || null); });
  while (shown.children.length > next.length) shown.lastElementChild.remove();
  if (focused && !shown.contains(document.activeElement)) $(focused)?.focus();
}

function carryTyped(old, fresh) {
  for (const field of old.querySelectorAll("textarea[id], input[id]:not([type=hidden])")) {
    const twin = fresh.querySelector(`#${CSS.escape(field.id)}`);
    if (twin && !twin.value && field.value) twin.value = field.value;
  }
}

// A form's fields as its API endpoint's JSON body ("payloads.0.kind" → {payloads: [{kind}]});
// the server reads a form posted without script the same way (workspaces.api.bodies.form_json).
export function formJson(form) {
  const body = {};
  for (const field of form.elements) {
    if (!field.name || field.disabled || ["csrfmiddlewaretoken", "idempotency_key"].includes(field.name)) continue;
    const parts = field.name.split(".");
    let holder = body;
    parts.slice(0, -1).forEach((part, i) => { holder = holder[part] ??= /^\d+$/.test(parts[i + 1]) ? [] : {}; });
    holder[parts[parts.length - 1]] = field.type === "checkbox" ? field.checked
      : field.type === "number" ? (field.value === "" ? null : Number(field.value)) : field.value;
  }
  return body;
}

// A server-rendered form with data-api posts its JSON there (with the API's headers) instead of
// leaving the page; what changed arrives as a live fragment. A refusal shows in the nearest alert.
// The answer goes to the page's script as a "groundwork:posted" event; data-keep-values keeps what was typed.
document.addEventListener("submit", async (event) => {
  const form = event.target;
  if (!form.matches("form[data-api]")) return;
  event.preventDefault();
  const buttons = form.querySelectorAll("button");
  let alert = null;
  for (let node = form; node && !alert; node = node.parentElement) alert = node.querySelector(":scope > [role=alert]");
  if (alert) { alert.hidden = true; alert.textContent = ""; }
  buttons.forEach((button) => { button.disabled = true; });
  try {
    const answer = await requestJson("POST", form.dataset.api, { body: formJson(form) });
    if (!form.hasAttribute("data-keep-values")) form.reset();
    // On the document: a live fragment may have replaced the form meanwhile.
    document.dispatchEvent(new CustomEvent("groundwork:posted", { detail: { form, answer } }));
  } catch (error) {
    if (alert) { alert.hidden = false; alert.textContent = error.message; }
  } finally {
    buttons.forEach((button) => { button.disabled = false; });
  }
});
document.addEventListener("change", (event) => {
  const form = event.target.form;
  if (form && event.target.closest("[data-submit-on-change]") && event.target.value) form.requestSubmit();
});

// A server-rendered citation chip, or a report's [n] of stored text, opens in the source dialog.
document.addEventListener("click", (event) => {
  const chip = event.target.closest("a.source-link, a.citation[data-version]");
  if (!chip || event.defaultPrevented) return;
  event.preventDefault();
  openCitation(chip.dataset);
});
