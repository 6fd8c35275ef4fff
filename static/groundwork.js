// What every page script shares: building elements safely, JSON requests with
// the API's headers, and the span list of a file's raw preview.
// Everything a user or a model wrote goes in with textContent, never innerHTML.
(function () {
  "use strict";

  const csrf = document.querySelector('meta[name="csrf-token"]').content;

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === undefined || value === null || value === false) continue;
      if (key === "class") node.className = value;
      else if (key === "text") node.textContent = value;
      else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
      else node.setAttribute(key, value === true ? "" : value);
    }
    for (const child of children.flat()) {
      if (child === null || child === undefined || child === false) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  class ApiError extends Error {
    constructor(status, body) {
      super((body && body.error) || `request failed (${status})`);
      this.status = status;
      this.body = body;
    }
  }

  function idempotencyKey() {
    return crypto.randomUUID ? crypto.randomUUID() : String(Date.now()) + Math.random();
  }

  // Every mutation carries the CSRF token and a fresh Idempotency-Key (SPEC §2.6).
  function mutationHeaders(extra) {
    return Object.assign({ "X-CSRFToken": csrf, "Idempotency-Key": idempotencyKey() }, extra || {});
  }

  async function requestJson(method, path, { body, headers } = {}) {
    const options = { method, headers: { Accept: "application/json" }, credentials: "same-origin" };
    if (method !== "GET") {
      Object.assign(options.headers, mutationHeaders(headers));
      if (body instanceof FormData) options.body = body;
      else if (body !== undefined) {
        options.headers["Content-Type"] = "application/json";
        options.body = JSON.stringify(body);
      }
    }
    const response = await fetch(path, options);
    const data = await response.json().catch(() => null);
    if (!response.ok) throw new ApiError(response.status, data);
    return data;
  }

  // A file's spans, the one given highlighted (the target of a source click).
  function spanList(spans, highlight) {
    return spans.map((span) => el("div", {
      class: `preview-span${span.span_id === highlight ? " highlight" : ""}`,
      id: `span-${span.span_id}`, "data-span-id": span.span_id, tabindex: "-1",
    },
    el("span", { class: "span-id", text: span.span_id }),
    span.locator ? el("span", { class: "span-locator", text: span.locator }) : null,
    el("p", { class: "span-text", text: span.text })));
  }

  function scrollToHighlight(container) {
    const target = container.querySelector(".preview-span.highlight");
    if (target) {
      target.scrollIntoView({ block: "center" });
      target.focus({ preventScroll: true });
    }
  }

  // A websocket that comes back after a drop, with growing pauses.
  function liveSocket(path, { onOpen, onMessage, onState }) {
    let delay = 500;
    let closed = false;
    let socket;
    function connect() {
      const scheme = location.protocol === "https:" ? "wss" : "ws";
      socket = new WebSocket(`${scheme}://${location.host}${path}`);
      socket.onopen = () => { delay = 500; onState && onState("connected"); onOpen && onOpen(); };
      socket.onmessage = (event) => onMessage(JSON.parse(event.data));
      socket.onclose = () => {
        onState && onState("disconnected");
        if (closed) return;
        setTimeout(connect, delay);
        delay = Math.min(delay * 2, 10000);
      };
    }
    connect();
    return { close() { closed = true; socket.close(); } };
  }

  // A SourceRef ("report.pdf::S4") opens that file's raw preview at the span, in the page's source dialog.
  async function openSource(sessionId, ref) {
    const [filename, spanId] = ref.split("::");
    const dialog = document.getElementById("source-dialog");
    document.getElementById("source-dialog-title").textContent = `${filename} · ${spanId}`;
    const spans = document.getElementById("source-dialog-spans");
    spans.replaceChildren(el("p", { class: "empty-state", text: "Loading…" }));
    if (!dialog.open) dialog.showModal();
    try {
      const manifest = await requestJson("GET", `/api/sessions/${sessionId}/context`);
      const file = manifest.files.find((f) => f.filename === filename);
      if (!file) throw new Error(`${filename} is no longer in this session's context.`);
      const preview = await requestJson("GET", file.preview_url);
      spans.replaceChildren(...spanList(preview.spans, spanId));
      scrollToHighlight(spans);
    } catch (error) {
      spans.replaceChildren(el("p", { class: "file-error", text: error.message }));
    }
  }

  const closeButton = document.getElementById("source-dialog-close");
  if (closeButton) closeButton.addEventListener("click", () => document.getElementById("source-dialog").close());

  window.Groundwork = { el, ApiError, mutationHeaders, requestJson, spanList, scrollToHighlight, liveSocket, openSource };
})();
