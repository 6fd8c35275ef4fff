// The usage panel (issue 14): the session's model calls, tokens and money by task,
// with what the digest cache and prompt caching saved, and the selected run's share
// in the Research tab. Read from GET /api/sessions/{sid}/usage, again after each
// parse update (the context socket) and each run status change (the runs socket).
// Everything shown goes in with textContent.
(function () {
  "use strict";

  const { el, requestJson } = Groundwork;
  const $ = (id) => document.getElementById(id);
  const sid = JSON.parse($("bootstrap").textContent).session.session_id;
  const REFRESH_AFTER_MS = 400; // a parse sends a burst of updates: one read after it settles
  const number = new Intl.NumberFormat();
  let usage = null;
  let timer = null;

  // The API gives six decimals (a digest can cost a fraction of a cent); people read cents,
  // and four places only while an amount is under one.
  function dollars(amount) {
    if (amount === null || amount === undefined) return "—";
    const value = Number(amount);
    if (value === 0) return "$0.00";
    return `$${value.toFixed(Math.abs(value) < 1 ? 4 : 2)}`;
  }
  const tokens = (line) =>
    line.input_tokens + line.output_tokens + line.cache_read_input_tokens + line.cache_creation_input_tokens;

  function cells(label, line) {
    return [
      el("td", { text: label }),
      el("td", { text: number.format(line.calls) }),
      el("td", { text: number.format(line.input_tokens) }),
      el("td", { text: number.format(line.output_tokens) }),
      el("td", { text: number.format(line.cache_read_input_tokens) }),
      el("td", { text: number.format(line.cache_creation_input_tokens) }),
      el("td", { text: dollars(line.cost) }),
      el("td", {
        text: dollars(line.saved.total),
        title: `digest cache: ${line.saved.digest_cache.calls} calls, ${dollars(line.saved.digest_cache.cost)}; `
          + `prompt caching: ${dollars(line.saved.prompt_caching)}`,
      }),
    ];
  }

  function render() {
    if (!usage) return;
    const total = usage.total;
    $("usage-summary").textContent =
      `${number.format(total.calls)} calls · ${number.format(tokens(total))} tokens · ${dollars(total.cost)}`
      + ` · saved ${dollars(total.saved.total)}`;
    $("usage-rows").replaceChildren(...usage.by_task.map((line) => el("tr", { "data-task": line.task }, cells(line.label, line))));
    $("usage-total").replaceChildren(el("tr", {}, cells("Total", total)));
    const notes = [];
    if (usage.free) notes.push("Offline mode and local embeddings: these calls run on this server and cost nothing.");
    if (usage.unpriced_models.length) notes.push(`Not in the price table (no cost shown): ${usage.unpriced_models.join(", ")}.`);
    if (usage.spending_cap.cap !== null) notes.push(`Spending cap: ${dollars(usage.spending_cap.cap)}.`);
    $("usage-notes").textContent = notes.join(" ");
  }

  async function refresh() {
    try {
      usage = await requestJson("GET", `/api/sessions/${sid}/usage`);
      render();
    } catch (error) {
      $("usage-summary").textContent = `usage unavailable: ${error.message}`;
    }
  }

  function refreshSoon() {
    clearTimeout(timer);
    timer = setTimeout(refresh, REFRESH_AFTER_MS);
  }

  Groundwork.liveSocket(`/ws/sessions/${sid}/context/`, { onOpen: refreshSoon, onMessage: refreshSoon });
  Groundwork.liveSocket(`/ws/sessions/${sid}/runs/`, { onOpen: refreshSoon, onMessage: refreshSoon });
  refresh();
})();
