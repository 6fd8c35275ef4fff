// The usage panel (issue 14): the server renders it (templates/context/_usage.html), with the page
// and again after each parse update (the context socket) and run change (the runs socket):
// GET /sessions/{sid}/usage/ gives its fragments. Here: when to read it, and the Research tab's
// "This run: …" line for the run chosen there (the server lists every run's line).
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
    showRunUsage();
  }

  function refreshSoon() {
    clearTimeout(timer);
    timer = setTimeout(refresh, REFRESH_AFTER_MS);
  }

  function showRunUsage() {
    const runId = $("run-select") && $("run-select").value;
    const line = runId && $("usage-by-run").querySelector(`[data-run-id="${CSS.escape(runId)}"]`);
    $("run-usage").hidden = !runId;
    $("run-usage").textContent = !runId ? "" : line ? line.textContent : "This run: no model calls yet";
  }

  $("run-select").addEventListener("change", showRunUsage);
  Groundwork.liveSocket(`/ws/sessions/${sid}/context/`, { onOpen: refreshSoon, onMessage: refreshSoon });
  Groundwork.liveSocket(`/ws/sessions/${sid}/runs/`, { onOpen: refreshSoon, onMessage: refreshSoon });
  showRunUsage();
})();
