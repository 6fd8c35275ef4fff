// The usage panel (issue 14): the server renders it (templates/context/_usage.html), with the page
// and again after each parse update (the context socket) and run change (the runs socket):
// GET /sessions/{sid}/usage/ gives its fragments. Here: when to read it (the Research tab's
// "This run: …" line is rendered with that tab: templates/research/_run_usage.html).
(function () {
  "use strict";

  const $ = (id) => document.getElementById(id);
  const sid = document.querySelector("[data-session-id]").dataset.sessionId;
  const REFRESH_AFTER_MS = 400; // a parse sends a burst of updates: one read after it settles
  let timer = null;

  async function refresh() {
    const response = await fetch(`/sessions/${sid}/usage/`);
    if (!response.ok) {
      $("usage-summary").textContent = `usage unavailable (${response.status})`;
      return;
    }
    Groundwork.swapFragments(await response.text());
  }

  function refreshSoon() {
    clearTimeout(timer);
    timer = setTimeout(refresh, REFRESH_AFTER_MS);
  }

  Groundwork.liveSocket(`/ws/sessions/${sid}/context/`, { onOpen: refreshSoon, onMessage: refreshSoon });
  Groundwork.liveSocket(`/ws/sessions/${sid}/runs/`, { onOpen: refreshSoon, onMessage: refreshSoon });
})();
