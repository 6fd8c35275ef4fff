// The session chat (SPEC §5): ask; when the assistant lacks something it shows a
// request card (attach a suggested excerpt, paste a note, attach a file of the
// session, or skip) and answers once the card is filled. Live over
// /ws/sessions/{sid}/conversation/; the history reloads with its requests and supplies.
(function () {
  "use strict";

  const { el, requestJson, citationButton, linksByRef, textWithCitations } = Groundwork;
  const $ = (id) => document.getElementById(id);
  const boot = JSON.parse(document.getElementById("bootstrap").textContent);
  const sid = boot.session.session_id;
  const sourceRef = new RegExp(`^(?:${boot.sourceref_pattern})$`);  // the server's grammar (llm_platform.sourcerefs)
  const STATUS_LABEL = { thinking: "thinking…", waiting_context: "waiting for context", failed: "failed" };
  let history = { messages: [], context_requests: [] };
  // user_message_id → the answer's text streamed so far (conversation:delta). Provisional: the
  // final conversation:message replaces it (its text was checked against its citations).
  const drafts = new Map();
  // "request_id/slot" → the note a person is typing into a card. Every event reloads the history
  // and renders it again: a card is kept while its request is unchanged, and one built again (a slot
  // supplied, a reminder) starts from what was typed, never from an empty field.
  const notes = new Map();
  const cardShapes = new WeakMap();  // a card → what it was built from (cardShape)
  let reloads = 0;  // reloads started
  let shownReload = 0;  // the latest reload rendered

  // Reloads overlap (an event while one is in flight) and the server answers them in any order: an
  // answer older than the one shown would take back what is on the page (the reply, a card).
  async function reload() {
    const number = ++reloads;
    try {
      const loaded = await requestJson("GET", `/api/research/conversation?session_id=${sid}`);
      if (number < shownReload) return;
      shownReload = number;
      history = loaded;
      render();
    } catch (error) {
      showError(error.message);
    }
  }

  function render() {
    const log = $("chat-log");
    for (const m of history.messages) if (m.reply_to) drafts.delete(m.reply_to);
    log.replaceChildren(...(history.messages.length || drafts.size
      ? [...history.messages.map(messageItem), ...[...drafts].map(([id, text]) => draftItem(id, text))]
      : [el("li", { class: "empty-state", text: "Ask about this session: the answer comes from its files, digests and reports, with sources." })]));
    log.scrollTop = log.scrollHeight;
    const open = history.context_requests.filter((r) => r.status === "open");
    renderCards(open);
    const busy = history.messages.some((m) => m.status === "thinking");
    $("chat-state").textContent = open.length ? "needs context" : busy ? "thinking…" : "";
  }

  function messageItem(message) {
    const who = message.role === "user" ? message.author || "you" : "assistant";
    const status = message.role === "user" && STATUS_LABEL[message.status] ? ` · ${STATUS_LABEL[message.status]}` : "";
    // An answer's SourceRefs, inline and as chips, open the version the reply pinned (source_links).
    const links = message.role === "assistant" ? linksByRef(message.source_links) : {};
    const citations = message.citations || [];
    return el("li", { class: message.role, "data-message-id": message.message_id, "data-status": message.status },
      el("span", { class: "who", text: `${who}${status}` }),
      el("p", { class: "content" }, ...textWithCitations(message.content, links, sid)),
      message.warning ? el("p", { class: "warning", text: message.warning }) : null,
      message.error ? el("p", { class: "file-error", text: message.error }) : null,
      citations.length ? el("div", { class: "sources" }, ...citations.map((ref) => citation(ref, links))) : null);
  }

  function draftItem(questionId, text) {
    return el("li", { class: "draft", "data-draft-for": questionId, "aria-busy": "true" },
      el("span", { class: "who", text: "assistant · writing…" }),
      el("p", { class: "content", text }));
  }

  // A delta continues the draft at `offset` (0: a new attempt starts over); text only, never markup.
  function showDelta(event) {
    const questionId = event.user_message_id;
    if (history.messages.some((m) => m.reply_to === questionId)) return;  // the final answer is in
    const text = (drafts.get(questionId) || "").slice(0, event.offset) + event.delta;
    drafts.set(questionId, text);
    const shown = $("chat-log").querySelector(`li[data-draft-for="${CSS.escape(questionId)}"]`);
    if (shown) {
      shown.querySelector(".content").textContent = text;
    } else {
      $("chat-log").querySelector(".empty-state")?.remove();
      $("chat-log").append(draftItem(questionId, text));
    }
    $("chat-log").scrollTop = $("chat-log").scrollHeight;
  }

  function citation(ref, links) {
    if (sourceRef.test(ref)) return citationButton(links[ref], sid, { ref });
    return el("span", { class: "tag", text: ref.split(":")[0] === "supply" ? "supplied note" : ref.replace(/:.{36}/, "") });
  }

  // An open request keeps the card it has while nothing it shows changed: a card built again would
  // lose what a person is typing into it, and the focus. Cards only come and go around it.
  function renderCards(open) {
    const box = $("chat-requests");
    const shown = new Map([...box.children].map((card) => [card.dataset.requestId, card]));
    const cards = open.map((request) => {
      const card = shown.get(request.request_id);
      return card && cardShapes.get(card) === cardShape(request) ? card : requestCard(request);
    });
    for (const card of [...box.children]) if (!cards.includes(card)) card.remove();
    cards.forEach((card, i) => { if (box.children[i] !== card) box.insertBefore(card, box.children[i] || null); });
    for (const key of notes.keys()) if (!open.some((r) => key.startsWith(`${r.request_id}/`))) notes.delete(key);
  }

  function cardShape(request) {
    return JSON.stringify([request.required, request.supplies.map((s) => s.slot), request.deadline, request.reminded]);
  }

  function requestCard(request) {
    const question = history.messages.find((m) => m.message_id === request.user_message_id);
    const given = new Set(request.supplies.map((s) => s.slot));
    const deadline = new Date(request.deadline);
    const card = el("section", { class: "request-card", "data-request-id": request.request_id, "aria-label": "Context request" },
      el("h3", { text: "The assistant needs context to answer" }),
      question ? el("p", { class: "muted small", text: `“${question.content}”` }) : null,
      ...request.required.map((slot) => slotForm(request, slot, given.has(slot.slot))),
      el("p", { class: "muted small", text: `Answers without it at ${deadline.toLocaleTimeString()}${request.reminded ? " (reminder sent)" : ""}.` }));
    cardShapes.set(card, cardShape(request));
    return card;
  }

  function slotForm(request, slot, done) {
    if (done) return el("div", { class: "slot" }, el("p", { text: `✓ ${slot.description}` }));
    const typed = `${request.request_id}/${slot.slot}`;
    const note = el("textarea", { rows: "3", "aria-label": `Note for: ${slot.description}`, placeholder: "Paste a note…",
      text: notes.get(typed) || "", oninput: () => notes.set(typed, note.value) });
    const supply = (payload) => send(request.request_id, [{ slot: slot.slot, ...payload }]);
    return el("div", { class: "slot", "data-slot": slot.slot },
      el("p", { text: slot.description }),
      // The excerpt takes the card's width; its source and Attach go under it, not beside it.
      ...(slot.suggestions || []).map((s) => el("div", { class: "suggestion" },
        el("p", { class: "small", text: s.text }),
        el("div", { class: "suggestion-actions" },
          s.source_url ? citationButton(s, sid) : null,
          el("button", { type: "button", text: "Attach", "aria-label": `Attach excerpt from ${s.label}`, onclick: () => supply({ kind: "snippet", text: s.text }) })))),
      note,
      el("div", { class: "slot-buttons" },
        el("button", { type: "button", class: "primary", text: "Attach note", onclick: () => note.value.trim() ? supply({ kind: "note", text: note.value }) : showError("Write the note first.") }),
        fileChooser(supply),
        el("button", { type: "button", text: "Skip", onclick: () => supply({ kind: "skip" }) })));
  }

  // A file of this session's Context tab, by name.
  function fileChooser(supply) {
    const select = el("select", { "aria-label": "Attach a file of this session" }, el("option", { value: "", text: "Attach a file…" }));
    select.addEventListener("focus", async () => {
      if (select.options.length > 1) return;
      const manifest = await requestJson("GET", `/api/sessions/${sid}/context`);
      select.append(...manifest.files.map((f) => el("option", { value: f.file_id, text: f.filename })));
    });
    select.addEventListener("change", () => select.value && supply({ kind: "file", file_id: select.value }));
    return select;
  }

  async function send(requestId, payloads) {
    showError(null);
    try {
      await requestJson("POST", "/api/research/conversation/context-supply", { body: { session_id: sid, request_id: requestId, payloads } });
      await reload();
    } catch (error) {
      showError(error.message);
    }
  }

  async function ask(event) {
    event.preventDefault();
    const input = $("chat-input");
    const message = input.value.trim();
    if (!message) return;
    $("chat-send").disabled = true;
    showError(null);
    try {
      await requestJson("POST", "/api/research/conversation", { body: { session_id: sid, message, force: $("chat-force").checked } });
      input.value = "";
      await reload();
    } catch (error) {
      showError(error.message);
    } finally {
      $("chat-send").disabled = false;
    }
  }

  function showError(message) {
    $("chat-error").hidden = !message;
    $("chat-error").textContent = message || "";
  }

  $("chat-form").addEventListener("submit", ask);
  $("chat-input").addEventListener("keydown", (event) => {
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) $("chat-form").requestSubmit();
  });
  // A delta grows the answer being written; every other event changes the history: reload it
  // (small) rather than patch it.
  Groundwork.liveSocket(`/ws/sessions/${sid}/conversation/`, {
    onOpen: reload,
    onMessage: (event) => (event.type === "conversation:delta" ? showDelta(event) : reload()),
    onState: (live) => { $("chat-log").dataset.live = live; },
  });
})();
