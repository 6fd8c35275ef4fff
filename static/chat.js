// The session chat (SPEC §5), rendered by the server (conversation/_chat.html) with the page and live.
// Here: the answer being written, streamed into a draft until its message arrives, and Ctrl+Enter.
import { $, liveSocket, sessionId as sid, swapFragments } from "./groundwork.js";
const answered = (questionId) => $("chat-log").querySelector(`li[data-reply-to="${CSS.escape(questionId)}"]`);

// A delta continues the draft answer to its question at `offset` (0: a new attempt starts over); text
// only, and provisional: the final message (checked against its citations) replaces the draft.
function showDelta(event) {
  const questionId = event.user_message_id;
  if (answered(questionId)) return;
  let draft = $("chat-log").querySelector(`li[data-draft-for="${CSS.escape(questionId)}"]`);
  if (!draft) {
    draft = $("chat-draft-template").content.firstElementChild.cloneNode(true);
    draft.dataset.draftFor = questionId;
    $("chat-log").append(draft);
  }
  const content = draft.querySelector(".content");
  content.textContent = content.textContent.slice(0, event.offset) + event.delta;
  $("chat-log").scrollTop = $("chat-log").scrollHeight;
}
function showFragments(html) {
  const before = $("chat-log").scrollHeight;
  swapFragments(html);
  for (const draft of $("chat-log").querySelectorAll("li[data-draft-for]")) {
    if (answered(draft.dataset.draftFor)) draft.remove();
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
