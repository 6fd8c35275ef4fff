// What every page script shares: JSON requests with the API's headers, live sockets, server-rendered
// fragments and forms, and the source dialog. No HTML is built here: it comes rendered from the
// server (Django's autoescaping), and the little text script sets goes in with textContent.
(function () {
  "use strict";

  const csrf = document.querySelector('meta[name="csrf-token"]').content;

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

  function scrollToHighlight(container) {
    const target = container.querySelector(".preview-span.highlight");
    if (!target) return;
    // A run of rows taller than the view starts at its top (its column names), not its middle.
    const tall = target.offsetHeight > container.clientHeight;
    if (container.scrollHeight > container.clientHeight) {
      // The container scrolls on its own (the source dialog's text): move it alone, so the
      // dialog's title and Close, and the page around it, stay where they are.
      const offset = target.getBoundingClientRect().top - container.getBoundingClientRect().top;
      container.scrollTop += offset - (tall ? 0 : (container.clientHeight - target.offsetHeight) / 2);
    } else {
      target.scrollIntoView({ block: tall ? "start" : "center" });
    }
    target.focus({ preventScroll: true });
  }

  // A websocket that comes back after a drop, with growing pauses. `path` may be a function: asked
  // again at each connect (a pane's socket names what the page shows then).
  function liveSocket(path, { onOpen, onMessage, onState }) {
    let delay = 500;
    let closed = false;
    let socket;
    function connect() {
      const scheme = location.protocol === "https:" ? "wss" : "ws";
      socket = new WebSocket(`${scheme}://${location.host}${typeof path === "function" ? path() : path}`);
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

  // --- citations ---------------------------------------------------------------------
  // A citation object {sourceref, version, span, source_url, + library: origin_session,
  // from_library} names the exact extracted version it was made from. It opens through
  // its source_url (GET /api/sources/{version}/{span}), never by file name: a file of
  // the same name in this session, or a newer upload, is other text.

  let opening = 0;
  // The page's source dialog: `heading` at once, then the server-rendered title, provenance and
  // spans `load` resolves to ({html}: context/_source.html's fragments), the highlighted span in view.
  async function openSourceDialog(heading, load) {
    const dialog = document.getElementById("source-dialog");
    const spans = document.getElementById("source-dialog-spans");
    const ticket = ++opening;
    document.getElementById("source-dialog-title").textContent = heading;
    document.getElementById("source-dialog-meta").replaceChildren();
    spans.replaceChildren(document.getElementById("source-loading-template").content.cloneNode(true));
    if (!dialog.open) dialog.showModal();
    try {
      const shown = await load();
      if (ticket !== opening) return;
      swapFragments(shown.html);
      scrollToHighlight(spans);
    } catch (error) {
      if (ticket !== opening) return;
      const failed = document.getElementById("source-failed-template").content.cloneNode(true);
      failed.firstElementChild.textContent = error.message;
      spans.replaceChildren(failed);
    }
  }

  // The cited version's spans in the page's source dialog, the cited span highlighted and in view:
  // the server renders them (context/_source.html, the page /sources/{version}/{span}/ as fragments).
  function openCitation(link, sessionId) {
    const heading = link && link.sourceref ? link.sourceref.replace("::", " · ") : "Source";
    return openSourceDialog(heading, async () => {
      const span = link && (link.span || (link.sourceref || "").split("::")[1]);
      if (!link || !link.version || !span) throw new Error("This citation names no stored text version.");
      const query = new URLSearchParams({ fragment: "", session: sessionId || "" });
      const response = await fetch(`/sources/${encodeURIComponent(link.version)}/${encodeURIComponent(span)}/?${query}`);
      if (response.status === 404) throw new Error("This source is no longer available.");
      if (!response.ok) throw new Error(`request failed (${response.status})`);
      return { html: await response.text() };
    });
  }

  // --- server-rendered fragments and forms ---------------------------------------------
  // A live fragment (HTML a consumer rendered from the page's own partials) is a list of
  // containers named by id; each one's children take the place of the shown container's.
  // A child whose id and markup are unchanged stays the same node (what is typed into it and
  // the focus stay); a changed one takes over what was typed into its fields (by id).
  // Children the page made itself ([data-client-only], a streamed draft) stay at the end.
  // A container marked data-swap="append" brings only new children: those whose id is not shown yet
  // are added at its end (a run's next thought-stream lines).
  function swapFragments(html) {
    const parsed = document.createElement("template");
    parsed.innerHTML = html;
    // The outermost elements with an id; a wrapper without one is looked through (a table's body
    // travels inside a <table>: the parser drops a <tbody> anywhere else).
    for (const fresh of parsed.content.querySelectorAll("[id]")) {
      if (fresh.parentElement && fresh.parentElement.closest("[id]")) continue;
      const shown = document.getElementById(fresh.id);
      if (shown && fresh.dataset.swap === "append") {
        for (const child of [...fresh.children]) if (!child.id || !document.getElementById(child.id)) shown.append(child);
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
    if (focused && !shown.contains(document.activeElement)) document.getElementById(focused)?.focus();
  }

  function carryTyped(old, fresh) {
    for (const field of old.querySelectorAll("textarea[id], input[id]:not([type=hidden])")) {
      const twin = fresh.querySelector(`#${CSS.escape(field.id)}`);
      if (twin && !twin.value && field.value) twin.value = field.value;
    }
  }

  // A form's fields as its API endpoint's JSON body ("payloads.0.kind" → {payloads: [{kind}]});
  // the server reads a form posted without script the same way (workspaces.api.bodies.form_json).
  function formJson(form) {
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
    const alert = nearestAlert(form);
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

  function nearestAlert(form) {
    for (let node = form; node; node = node.parentElement) {
      const alert = node.querySelector(":scope > [role=alert]");
      if (alert) return alert;
    }
    return null;
  }

  // A server-rendered citation chip carries its citation object in data attributes.
  document.addEventListener("click", (event) => {
    const chip = event.target.closest("a.source-link");
    if (!chip || event.defaultPrevented) return;
    event.preventDefault();
    const { source: sourceref, version, span } = chip.dataset;
    openCitation({ sourceref, version, span }, document.querySelector("[data-session-id]")?.dataset.sessionId);
  });

  const closeButton = document.getElementById("source-dialog-close");
  if (closeButton) closeButton.addEventListener("click", () => document.getElementById("source-dialog").close());

  window.Groundwork = {
    ApiError, mutationHeaders, requestJson, scrollToHighlight, liveSocket,
    openCitation, openSourceDialog, swapFragments, formJson,
  };
})();
