// The usage panel (issue 14): the server renders it (templates/context/_usage.html), with the page
// and again after each parse update (the context socket) and run change (the runs socket):
// GET /sessions/{sid}/usage/ gives its fragments. Here: when to read it (the Research tab's
// "This run: …" line is rendered with that tab: templates/research/_run_usage.html).
(function () {
  "use strict";

  const sid = document.querySelector("[data-session-id]").dataset.sessionId;
  let timer = null;

  // A parse sends a burst of updates: one read after it settles.
  function refreshSoon() {
    clearTimeout(timer);
    timer = setTimeout(() => Groundwork.load(`/sessions/${sid}/usage/`).catch((error) => {
      if (error.status) document.getElementById("usage-summary").textContent = `usage unavailable (${error.status})`;
    }), 400);
  }

  Groundwork.liveSocket(`/ws/sessions/${sid}/context/`, { onOpen: refreshSoon, onMessage: refreshSoon });
  Groundwork.liveSocket(`/ws/sessions/${sid}/runs/`, { onOpen: refreshSoon, onMessage: refreshSoon });
})();
