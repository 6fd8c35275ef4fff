// What every page script shares: API requests, live sockets, server-rendered fragments and forms, the source
// dialog. No HTML is built here: it comes rendered (Django's autoescaping); a script's text goes in as textContent.
const csrf = document.querySelector('meta[name="csrf-token"]').content;
export const $ = (id) => document.getElementById(id);
export const sessionId = document.querySelector("[data-session-id]")?.dataset.sessionId;  // on a session page

const apiError = (status, body) => Object.assign(new Error(body?.error || `request failed (${status})`), { status });
// A request to the API: its JSON answer, or an error with its status and message. A mutation carries the
// CSRF token and a fresh Idempotency-Key (SPEC §2.6). XHR, not fetch: only XHR reports upload progress.
export const requestJson = (method, path, { body, headers, onProgress } = {}) => new Promise((resolve, reject) => {
  const xhr = new XMLHttpRequest();
  xhr.open(method, path);
  xhr.responseType = "json";  // null when the answer is not JSON
  const key = crypto.randomUUID ? crypto.randomUUID() : String(Date.now()) + Math.random();
  const sent = method === "GET" ? {} : { "X-CSRFToken": csrf, "Idempotency-Key": key, ...headers };
  if (body !== undefined && !(body instanceof FormData)) sent["Content-Type"] = "application/json";
  Object.entries({ Accept: "application/json", ...sent }).forEach(([name, value]) => xhr.setRequestHeader(name, value));
  if (onProgress) xhr.upload.onprogress = (event) => event.lengthComputable && onProgress(event.loaded / event.total);
  xhr.onload = () => (xhr.status < 300 ? resolve(xhr.response) : reject(apiError(xhr.status, xhr.response)));
  xhr.onerror = () => reject(apiError(0, { error: "network error: the request did not reach the server" }));
  xhr.send(body === undefined || body instanceof FormData ? body : JSON.stringify(body));
});

// The fragments a GET of `path` answers, given to `show` unless a later load of `key` started meanwhile.
const latest = {};
export async function load(path, key = path, show = swapFragments) {
  const ticket = (latest[key] = (latest[key] || 0) + 1);
  const response = await fetch(path, { headers: { "X-Requested-With": "fetch" } });  // signed out: a 401
  const html = response.ok ? await response.text() : null;
  if (ticket !== latest[key]) return false;
  if (!response.ok) throw apiError(response.status, await response.json().catch(() => null));
  show(html);
  return true;
}
export function scrollToHighlight(container) {
  const target = container.querySelector(".preview-span.highlight");
  if (!target) return;
  // Only the nearest scroller moves (the dialog's title and Close stay); tall rows start at their column names.
  target.scrollIntoView({ block: target.offsetHeight > container.clientHeight ? "start" : "center", container: "nearest" });
  target.focus({ preventScroll: true });
}

// A websocket that comes back after a drop, with growing pauses; `path()` is asked again at each connect.
export function liveSocket(path, { onMessage, onState }) {
  let delay = 500, closed = false, socket;
  function connect() {
    socket = new WebSocket(`${location.protocol.replace("http", "ws")}//${location.host}${typeof path === "function" ? path() : path}`);
    socket.onopen = () => { delay = 500; onState("connected"); };
    socket.onmessage = (event) => onMessage(JSON.parse(event.data));
    socket.onclose = () => { onState("disconnected"); if (!closed) setTimeout(connect, delay); delay = Math.min(delay * 2, 10000); };
  }
  connect();
  return { close() { closed = true; socket.close(); } };
}

// The source dialog: `heading` at once, then the fragments of context/_source.html, its span in view.
export async function openSource(heading, path, gone) {
  const spans = $("source-dialog-spans");
  $("source-dialog-title").textContent = heading;
  $("source-dialog-meta").replaceChildren();
  spans.replaceChildren($("source-loading-template").content.cloneNode(true));
  if (!$("source-dialog").open) $("source-dialog").showModal();
  try {
    if (await load(path, "source-dialog")) scrollToHighlight(spans);
  } catch (error) {
    spans.replaceChildren($("source-failed-template").content.cloneNode(true));
    spans.firstElementChild.textContent = error.status === 404 ? gone : error.message;
  }
}

// A fragment (rendered from the page's own partials) is containers named by id, whose children replace the
// shown ones'. An unchanged child stays the same node (with its typed text and focus); a changed one takes
// over its fields' typed text; [data-client-only] children stay; data-swap="append" adds only new ids.
export function swapFragments(html) {
  const parsed = document.createElement("template");
  parsed.innerHTML = html;
  // The outermost elements with an id (a <tbody> travels inside a <table>: the parser drops it elsewhere).
  for (const fresh of parsed.content.querySelectorAll("[id]")) {
    if (fresh.parentElement?.closest("[id]")) continue;
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
    const old = byId.get(child.id);
    if (old?.isEqualNode(child)) return old;
    if (old) carryTyped(old, child);
    return child;
  });
  next.push(...[...shown.children].filter((child) => child.hasAttribute("data-client-only")));
  const focused = shown.contains(document.activeElement) ? document.activeElement : null, at = focused?.matches("a[href]") ? [...twins(focused)].indexOf(focused) : -1;
  next.forEach((child, i) => { if (shown.children[i] !== child) shown.insertBefore(child, shown.children[i] || null); });
  while (shown.children.length > next.length) shown.lastElementChild.remove();
  if (focused && !focused.isConnected) (focused.id ? $(focused.id) : twins(focused)[at])?.focus();  // a citation has no id: its twin
}
function carryTyped(old, fresh) {
  for (const field of old.querySelectorAll("textarea[id], input[id]:not([type=hidden])")) {
    const twin = fresh.querySelector(`#${CSS.escape(field.id)}`);
    if (twin && !twin.value && field.value) twin.value = field.value;
  }
}

// A form's fields as its endpoint's JSON body ("payloads.0.kind" → {payloads: [{kind}]}), as bodies.form_json.
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

// A form with data-api posts its JSON there instead of leaving the page (the change arrives as a fragment);
// a refusal shows in the nearest alert, the answer goes out as "groundwork:posted".
document.addEventListener("submit", async (event) => {
  const form = event.target;
  if (!form.matches("form[data-api]")) return;
  event.preventDefault();
  const buttons = form.querySelectorAll("button");
  let alert = null;
  for (let node = form; node && !alert; node = node.parentElement) alert = node.querySelector(":scope > [role=alert]");
  if (alert) Object.assign(alert, { hidden: true, textContent: "" });
  buttons.forEach((button) => { button.disabled = true; });
  try {
    const answer = await requestJson("POST", form.dataset.api, { body: formJson(form) });
    if (!form.hasAttribute("data-keep-values")) form.reset();
    document.dispatchEvent(new CustomEvent("groundwork:posted", { detail: { form, answer } }));  // a fragment may replace the form
  } catch (error) {
    if (alert) Object.assign(alert, { hidden: false, textContent: error.message });
  } finally {
    buttons.forEach((button) => { button.disabled = false; });
  }
});
document.addEventListener("change", (event) => {
  const form = event.target.form;
  if (form && event.target.closest("[data-submit-on-change]") && event.target.value) form.requestSubmit();
});
// A citation opens its exact version in the source dialog, never a file by name (a newer upload is other text).
// Closed, the dialog gives focus back to it, or to its twin in its place when a push re-rendered it meanwhile.
let opener;  // {chip, at}: the citation and its place among those with its href
const twins = (chip) => document.querySelectorAll(`a[href="${CSS.escape(chip.getAttribute("href"))}"]`);
$("source-dialog")?.addEventListener("close", () => opener && !opener.chip.isConnected && twins(opener.chip)[opener.at]?.focus());
document.addEventListener("click", (event) => {
  const chip = event.target.closest("a.source-link, a.citation[data-version]");
  if (!chip || event.defaultPrevented) return;
  event.preventDefault();
  opener = { chip, at: [...twins(chip)].indexOf(chip) };
  const { source, version, span } = chip.dataset;
  const query = new URLSearchParams({ fragment: "", session: sessionId || "" });
  const path = `/sources/${encodeURIComponent(version)}/${encodeURIComponent(span)}/?${query}`;
  openSource(source ? source.replace("::", " · ") : "Source", path, "This source is no longer available.");
});
