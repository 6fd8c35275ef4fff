// The session chat (SPEC §5). The server renders it (templates/conversation/_chat.html), with the page
// and live: /ws/sessions/{sid}/conversation/pane/ sends the pane's fragments after every chat event.
// Here: the answer being written, streamed into a draft until its message arrives, and Ctrl+Enter.
(function () {
  "use strict";

  const { liveSocket, swapFragments } = Groundwork;
  const $ = (id) => document.getElementById(id);
  const sid = document.querySelector("[data-session-id]").dataset.sessionId;
  // user_message_id → the answer's text streamed so far (conversation:delta). Provisional: the
  // final message replaces it (its text was checked against its citations).
  const drafts = new Map();

  const answered = (questionId) => $("chat-log").querySelector(`li[data-reply-to="${CSS.escape(questionId)}"]`);

  // A delta continues the draft at `offset` (0: a new attempt starts over); text only, never markup.
  function showDelta(event) {
    const questionId = event.user_message_id;
    if (answered(questionId)) return;
    const text = (drafts.get(questionId) || "").slice(0, event.offset) + event.delta;
    drafts.set(questionId, text);
    let draft = $("chat-log").querySelector(`li[data-draft-for="${CSS.escape(questionId)}"]`);
    if (!draft) {
      draft = $("chat-draft-template").content.firstElementChild.cloneNode(true);
      draft.dataset.draftFor = questionId;
      $("chat-log").append(draft);
    }
    draft.querySelector(".content").textContent = text;
    $("chat-log").scrollTop = $("chat-log").scrollHeight;
  }

  function showFragments(html) {
    const before = $("chat-log").scrollHeight;
    swapFragments(html);
    for (const draft of $("chat-log").querySelectorAll("li[data-draft-for]")) {
      if (answered(draft.dataset.draftFor)) {
        drafts.delete(draft.dataset.draftFor);
        draft.remove();
      }
    }
    if ($("chat-log").scrollHeight !== before) $("chat-log").scrollTop = $("chat-log").scrollHeight;
  }

  $("chat-input").addEventListener("keydown", (event) => {
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) $("chat-form").requestSubmit();
  });
  liveSocket(`/ws/sessions/${sid}/conversation/pane/`, {
    onMessage: (event) => (event.type === "conversation:delta" ? showDelta(event) : showFragments(event.html)),
    onState: (live) => { $("chat-log").dataset.live = live; },
  });
})();
