// The Research tab: start a run, watch its tree grow and its thought stream
// narrate every event, read its cited report. Every citation opens the exact
// text version it was made from (Groundwork.openCitation, through its source_url).
// Runs a teammate starts appear live (the session's runs socket), and the
// selected run's tree grows with each of its events.
(function () {
  "use strict";

  const { el, requestJson, citationButton, originNote, linksByRef, formatDate, openCitation } = Groundwork;
  const $ = (id) => document.getElementById(id);
  const boot = JSON.parse(document.getElementById("bootstrap").textContent);
  const sid = boot.session.session_id;
  const EVENTS_PAGE = 500; // the API's most events per page
  const CATCH_UP_AGAIN_MS = 100; // a gap is an event being committed: look again after a moment
  const ACTIVE = new Set(["queued", "binding", "running", "reporting"]);
  const STATUS_LABEL = {
    queued: "Queued", binding: "Parsing context", running: "Exploring", reporting: "Writing report",
    completed: "Completed", failed: "Failed", cancelled: "Cancelled",
  };
  // Statuses only move forward; messages from different workers may arrive the other way round.
  const RUN_RANK = { queued: 0, binding: 1, running: 2, reporting: 3, completed: 4, failed: 4, cancelled: 4 };
  const NODE_RANK = { pending: 0, running: 1 }; // every other node status is final (2)
  const EVENT_STATUS = {
    context_binding_parsing_started: "binding", context_binding_parsing_completed: "running",
    report_context_attached: "reporting", run_completed: "completed", run_failed: "failed", run_cancelled: "cancelled",
  };
  const NODE_LABEL = {
    pending: "Pending", running: "Running", sufficient: "Answered", decomposed: "Split",
    limited: "Stopped at a limit", failed: "Failed", cancelled: "Cancelled",
  };

  const state = {
    runs: boot.runs, // summaries, newest first
    run: null, // snapshot of the selected run
    lastSeq: 0,
    events: [], // the selected run's events received so far, in seq order
    socket: null,
    socketRun: null, // the run whose socket is open
    selectedNode: null,
    debug: null, // {title, body}: what the context pane shows (ui_debug)
  };

  // --- narration (SPEC §4: every event type in plain words) ------------------------

  const plural = (n, one, many) => `${n} ${n === 1 ? one : many || one + "s"}`;

  const NARRATE = {
    run_queued: (p) => p.updates_run
      ? `Update of an earlier report queued: “${p.question}”.`
      : `Run queued: “${p.question}”.`,
    update_checked: (p) =>
      `Re-checked the claims citing ${p.changed_files.map((f) => `${f.filename} (${f.status})`).join(", ")}: ${p.message}` +
      (p.explored_again.length ? `; exploring again ${p.explored_again.map((n) => `node ${n}`).join(", ")}.` : "; no node needs exploring again."),
    context_binding_parsing_started: (p) => p.files_total
      ? `Parsing the session's context: ${plural(p.files_total, "file")}, ${p.files_ready} already parsed…`
      : "No context files in this session: the run relies on search alone.",
    context_binding_parsing_file_completed: (p) =>
      `Parsing context file ${p.files_done}/${p.files_total}… ${p.filename} ${p.status === "ready" ? "is ready" : "failed"}.`,
    context_binding_parsing_completed: (p) =>
      `Context ready: ${p.files_ready} of ${plural(p.files_total, "file")} parsed${p.files_error ? `, ${p.files_error} failed` : ""}.`,
    context_binding_no_usable_context: (p) => `Warning: ${p.message}.`,
    context_for_node_ready: (p) => p.mode === "root_full"
      ? `Gave node ${p.node_id} the full user context (${plural(p.selected_items_count, "item")}).`
      : `Prepared context slice for node ${p.node_id} (${plural(p.selected_items_count, "item")}).`,
    node_queries: (p) => `Node ${p.node}: searching for ${p.queries.map((q) => `“${q}”`).join(", ")}.`,
    node_search_completed: (p) =>
      `Node ${p.node}: ${plural(p.results, "result")} from ${plural(p.documents, "document")}.` +
      (p.errors.length ? ` Search problems: ${p.errors.join("; ")}.` : ""),
    node_findings: (p) => `Node ${p.node}: ${plural(p.findings, "finding")} drawn from the results.`,
    node_sufficiency: (p) => p.is_sufficient
      ? `Node ${p.node} is answered. ${p.reasoning}`
      : `Node ${p.node} needs more. ${p.reasoning}`,
    node_decomposed: (p) =>
      `Node ${p.node} splits into ${p.children.map((c) => `${c.node} “${c.question}”`).join(", ")}.`,
    context_split_fallback: (p) =>
      `The context split for node ${p.node} could not be used (${p.reason}); items were assigned by shared words instead.`,
    node_limited: (p) => `Node ${p.node} stops here: ${p.reason}.`,
    node_completed: (p) => `Node ${p.node} done: ${NODE_LABEL[p.status] || p.status}.`,
    node_failed: (p) => `Node ${p.node} failed: ${p.error}`,
    report_context_attached: (p) =>
      `Attached full user context for report writing (${plural(p.items, "item")} from ${plural(p.files, "file")}, ` +
      `${plural(p.findings, "finding")}, ${plural(p.references, "reference")}).`,
    run_completed: (p) => p.update ? `Updated report ready: ${p.update}.` : `Report ready: “${p.title}”.`,
    run_failed: (p) => `The run failed: ${p.error}`,
    run_cancelled: () => "The run was cancelled.",
    coverage_recorded: (p) => `Coverage: ${p.summary}.`,
  };

  function narrate(event) {
    const say = NARRATE[event.type];
    return say ? say(event.payload) : `${event.type.replace(/_/g, " ")}.`;
  }

  // --- runs ------------------------------------------------------------------------

  async function selectRun(runId) {
    if (runId && runId === state.socketRun) return; // already shown
    if (state.socket) state.socket.close();
    state.socket = null;
    state.socketRun = runId;
    if ($("run-notice").dataset.run === runId) hideNotice();
    state.run = null;
    state.lastSeq = 0;
    state.events = [];
    state.selectedNode = null;
    state.debug = null;
    $("thought-stream").replaceChildren();
    render();
    if (!runId) return;
    await refreshRun(runId);
    state.socket = Groundwork.liveSocket(`/ws/runs/${runId}/`, {
      onOpen: () => catchUp(runId),
      onMessage: (message) => message.type === "run.event" && receive(runId, [message.event]),
      onState: (live) => { $("research-tab").dataset.live = live; },
    });
  }

  async function refreshRun(runId) {
    try {
      const run = await requestJson("GET", `/api/runs/${runId}`);
      if (runId !== selectedRunId()) return;
      const shown = state.run && state.run.run_id === run.run_id ? state.run : null;
      if (shown && run.last_seq < shown.last_seq) return; // an older snapshot answered late
      // The snapshot may be older than events already shown: they are applied again on top of it.
      if (shown && RUN_RANK[shown.status] > RUN_RANK[run.status]) run.status = shown.status;
      state.run = run;
      for (const event of state.events) if (event.seq > run.last_seq) applyEvent(event);
      upsertSummary(run);
      render();
    } catch (error) {
      showError(error.message);
    }
  }

  // Events of parallel nodes can reach the socket out of order: a gap in the
  // numbering is filled from the stored events, so the stream stays in seq order.
  // A gap found while a catch-up is in flight asks for one more: that catch-up's page may
  // have been read before the event after the gap was stored, and the run's last event
  // (received over the socket, then dropped for the gap) would otherwise never be shown.
  let catchingUp = false;
  let catchUpAgain = false;
  async function catchUp(runId) {
    if (catchingUp) {
      catchUpAgain = true;
      return;
    }
    catchingUp = true;
    try {
      do {
        if (catchUpAgain) await new Promise((resolve) => setTimeout(resolve, CATCH_UP_AGAIN_MS));
        catchUpAgain = false;
        let page;
        do {
          page = await requestJson("GET", `/api/runs/${runId}/events?after=${state.lastSeq}`);
          receive(runId, page.events);
        } while (page.events.length === EVENTS_PAGE && runId === selectedRunId());
      } while (catchUpAgain && runId === selectedRunId());
    } finally {
      catchingUp = false;
      catchUpAgain = false;
    }
  }

  let refreshTimer = null;
  function scheduleRefresh(runId) {
    // At most one snapshot in flight per 300 ms, however steady the events: never put off for good.
    if (refreshTimer) return;
    refreshTimer = setTimeout(() => { refreshTimer = null; refreshRun(runId); }, 300);
  }

  function receive(runId, events) {
    if (runId !== selectedRunId()) return;
    const stream = $("thought-stream");
    for (const event of [...events].sort((a, b) => a.seq - b.seq)) {
      if (event.seq <= state.lastSeq) continue;
      if (event.seq > state.lastSeq + 1) {
        catchUp(runId);
        break;
      }
      state.lastSeq = event.seq;
      state.events.push(event);
      applyEvent(event);
      stream.append(el("li", { "data-seq": event.seq, "data-type": event.type, class: event.type.includes("fail") || event.type.includes("no_usable") ? "warn" : null },
        el("time", { datetime: event.created_at, text: new Date(event.created_at).toLocaleTimeString() }),
        el("span", { text: narrate(event) })));
      followDebug(event);
      if (event.type === "run_completed") offerReport();
    }
    stream.scrollTop = stream.scrollHeight;
    renderStatus();
    renderTree();
    renderDebug();
    // The snapshot adds what events do not carry (findings, results, the report).
    scheduleRefresh(runId);
  }

  // Below 1200 px one view shows at a time: a run that finishes while its tree is shown opens its report.
  function offerReport() {
    const views = $("research-views");
    if ($("research-tab").dataset.view === "tree" && getComputedStyle(views).display !== "none") $("view-report").click();
  }

  // The tree and the status follow each event at once, in seq order; the snapshot fills in the rest.
  function applyEvent(event) {
    const run = state.run;
    if (!run) return;
    const p = event.payload;
    if (EVENT_STATUS[event.type]) setRunStatus(run, EVENT_STATUS[event.type]);
    const node = (id) => run.nodes.find((n) => n.node_id === id);
    if (event.type === "context_for_node_ready") {
      setNodeStatus(node(p.node_id) || addNode(run, p.node_id, p.node_id === "1" ? run.question : ""), "running");
    } else if (event.type === "node_decomposed") {
      for (const child of p.children) if (!node(child.node)) addNode(run, child.node, child.question);
    } else if (event.type === "node_completed") {
      setNodeStatus(node(p.node), p.status);
    } else if (event.type === "node_failed") {
      const failed = node(p.node);
      if (failed) failed.error = p.error;
      setNodeStatus(failed, "failed");
    } else if (event.type === "run_failed" || event.type === "run_cancelled") {
      if (p.error) run.error = p.error;
      for (const open of run.nodes) if (open.status === "pending" || open.status === "running") open.status = "cancelled";
    }
  }

  function addNode(run, nodeId, question) {
    const parent = nodeId.includes(".") ? nodeId.slice(0, nodeId.lastIndexOf(".")) : null;
    const node = {
      node_id: nodeId, parent_id: parent, depth: nodeId.split(".").length - 1, status: "pending", question,
      rationale: "", queries: [], results: [], findings: [], sufficiency: null, error: "", context_slice: null,
    };
    run.nodes.push(node);
    return node;
  }

  function setNodeStatus(node, status) {
    if (node && (NODE_RANK[status] ?? 2) >= (NODE_RANK[node.status] ?? 2)) node.status = status;
  }

  function setRunStatus(run, status) {
    if (RUN_RANK[status] >= RUN_RANK[run.status]) run.status = status;
  }

  // --- the session's runs, live (run.created, run.status) ------------------------------

  function upsertSummary(run) {
    const summary = {
      run_id: run.run_id, session_id: run.session_id, question: run.question, status: run.status,
      created_at: run.created_at, finished_at: run.finished_at, url: run.url,
    };
    const known = state.runs.find((r) => r.run_id === run.run_id);
    if (!known) {
      state.runs.push(summary);
      state.runs.sort((a, b) => (a.created_at < b.created_at ? 1 : a.created_at > b.created_at ? -1 : 0));
      return true;
    }
    if (RUN_RANK[summary.status] >= RUN_RANK[known.status]) Object.assign(known, summary);
    return false;
  }

  function onSessionRun(message) {
    if (message.type !== "run.created" && message.type !== "run.status") return;
    const run = message.run;
    const selected = selectedRunId();
    const added = upsertSummary(run);
    renderRunOptions(selected || run.run_id);
    if (state.run && state.run.run_id === run.run_id) {
      setRunStatus(state.run, run.status);
      renderStatus();
      if (ACTIVE.has(run.status)) return;
      scheduleRefresh(run.run_id); // finished: the snapshot brings the report
    } else if (added && message.type === "run.created") {
      if (!selected) selectRun(run.run_id);
      else showNotice(run, message.by);
    }
  }

  async function refreshRunList() {
    try {
      const page = await requestJson("GET", `/api/sessions/${sid}/runs`);
      const selected = selectedRunId();
      let newest = null;
      for (const run of page.runs) if (upsertSummary(run)) newest = newest || run;
      renderRunOptions(selected || (newest && newest.run_id));
      if (newest && !selected) selectRun(newest.run_id);
      else if (newest) showNotice(newest, null);
    } catch (error) {
      showError(error.message);
    }
  }

  function showNotice(run, by) {
    const box = $("run-notice");
    box.dataset.run = run.run_id;
    const what = run.updates_run ? "started an update of a report" : "started a run";
    box.replaceChildren(`${by || "A teammate"} ${what}: “${run.question.slice(0, 80)}”. `,
      el("button", { type: "button", class: "show-run", text: "Show it", onclick: () => {
        hideNotice();
        renderRunOptions(run.run_id);
        selectRun(run.run_id);
      } }));
    box.hidden = false;
  }

  function hideNotice() {
    const box = $("run-notice");
    box.hidden = true;
    box.dataset.run = "";
    box.replaceChildren();
  }

  // ui_debug (seed 001 §7.2): parsing progress during bind, the node's slice on entry, the attached context at report time.
  function followDebug(event) {
    const p = event.payload;
    if (event.type.startsWith("context_binding_parsing")) {
      state.debug = { title: "Parsing the session's context", body: { files_total: p.files_total, files_ready: p.files_ready, files_error: p.files_error, ...(p.filename ? { last_file: p.filename } : {}) } };
    } else if (event.type === "context_for_node_ready") {
      state.debug = { title: `Context slice of node ${p.node_id} (${p.mode})`, body: p.context_slice };
    } else if (event.type === "report_context_attached") {
      state.debug = { title: "Full user context attached for the report", body: p };
    }
  }

  const selectedRunId = () => $("run-select").value || null;

  async function startRun(event) {
    event.preventDefault();
    const number = (id) => (($(id).value || "").trim() === "" ? undefined : Number($(id).value));
    const body = {
      question: $("run-question").value.trim(),
      max_depth: number("limit-depth"),
      max_children: number("limit-children"),
      max_nodes: number("limit-nodes"),
    };
    $("start-run").disabled = true;
    showError(null);
    try {
      const run = await requestJson("POST", `/api/sessions/${sid}/runs`, { body });
      upsertSummary(run); // its run.created may have come first
      renderRunOptions(run.run_id);
      await selectRun(run.run_id);
    } catch (error) {
      showError(error.message);
    } finally {
      $("start-run").disabled = false;
    }
  }

  async function cancelRun() {
    if (!state.run) return;
    try {
      state.run = await requestJson("POST", `/api/runs/${state.run.run_id}/cancel`);
      render();
    } catch (error) {
      showError(error.message);
    }
  }

  function showError(message) {
    $("run-error").hidden = !message;
    $("run-error").textContent = message || "";
  }

  // --- rendering -------------------------------------------------------------------

  function render() {
    renderStatus();
    renderTree();
    renderNodeDetail();
    renderReport();
    renderDebug();
  }

  function renderStatus() {
    const run = state.run;
    $("run-state").textContent = run ? STATUS_LABEL[run.status] || run.status : "";
    $("run-state").dataset.status = run ? run.status : "";
    $("cancel-run").hidden = !(run && ACTIVE.has(run.status));
    renderProgress();
  }

  // --- the progress line: from the events (a reload replays them) and the snapshot ------

  let progressTimer = null;
  function renderProgress() {
    const run = state.run;
    const line = $("run-progress");
    line.textContent = run ? progressText(run) : "";
    line.hidden = !run;
    const ticking = Boolean(run && ACTIVE.has(run.status));
    if (ticking && !progressTimer) progressTimer = setInterval(renderProgress, 1000); // the elapsed time
    if (!ticking && progressTimer) { clearInterval(progressTimer); progressTimer = null; }
  }

  function latestPayload(types) {
    for (let i = state.events.length - 1; i >= 0; i--) {
      if (types.includes(state.events[i].type)) return state.events[i].payload;
    }
    return null;
  }

  function progressText(run) {
    const elapsed = elapsedText(run);
    if (run.status === "queued") return `Queued · ${elapsed}`;
    if (run.status === "binding") {
      const files = latestPayload(["context_binding_parsing_file_completed", "context_binding_parsing_started"])
        || run.context_processing || {};
      const done = files.files_done ?? (files.files_ready || 0) + (files.files_error || 0);
      return `Parsing context: ${done}/${files.files_total || 0} files · ${elapsed}`;
    }
    const open = run.nodes.filter((n) => n.status in NODE_RANK).length;
    // Node and run ends carry the calls and tokens so far; the snapshot may be newer still.
    const usage = (latestPayload(["node_completed", "node_failed", "run_completed"]) || {}).usage || {};
    const calls = Math.max(usage.calls || 0, run.model_calls || 0);
    const tokens = Math.max(usage.tokens || 0, run.tokens_used || 0);
    return `Nodes: ${run.nodes.length - open} done · ${open} open · limit ${run.limits.max_nodes} · ` +
      `${plural(calls, "model call")} · ${tokens.toLocaleString("en")} tokens · ${elapsed}`;
  }

  // A running run counts up ("0:42 elapsed"); a finished one says how long it took, in tenths of a
  // second when that was under ten seconds (an offline run is), rather than "0:00 elapsed".
  function elapsedText(run) {
    const start = Date.parse(run.started_at || run.created_at);
    const end = run.finished_at ? Date.parse(run.finished_at) : Date.now();
    const seconds = Math.max(0, (end - start) / 1000);
    const whole = Math.round(seconds);
    const clock = `${Math.floor(whole / 60)}:${String(whole % 60).padStart(2, "0")}`;
    if (!run.finished_at) return `${clock} elapsed`;
    return seconds < 10 ? `took ${seconds.toFixed(1)} s` : `took ${clock}`;
  }

  function renderRunOptions(selected) {
    const select = $("run-select");
    // Status and time first: a narrow select cuts the end of its text, and the question is what can go.
    select.replaceChildren(...state.runs.map((run) => {
      const when = new Date(run.created_at).toLocaleString(undefined, { dateStyle: "short", timeStyle: "short" });
      const label = `${STATUS_LABEL[run.status] || run.status} · ${when} · ${run.updates_run ? "Update · " : ""}${run.question}`;
      return el("option", { value: run.run_id, selected: run.run_id === selected, title: label, text: label });
    }));
    const none = state.runs.length === 0;
    select.hidden = none;
    document.querySelector('label[for="run-select"]').hidden = none;
  }

  function renderTree() {
    const tree = $("node-tree");
    const nodes = state.run ? state.run.nodes : [];
    if (!nodes.length) {
      const waiting = state.run && ACTIVE.has(state.run.status);
      tree.replaceChildren(el("li", { class: "empty-state", text: state.run
        ? (waiting ? "The tree starts once the context is parsed…" : "This run has no nodes.")
        : "Start a run: the question is explored as a tree of sub-questions, grounded in the Context tab's files." }));
      return;
    }
    const children = {};
    for (const node of nodes) (children[node.parent_id || ""] ||= []).push(node);
    const branch = (node) => el("li", { "data-node": node.node_id },
      el("button", {
        type: "button", class: `node${state.selectedNode === node.node_id ? " selected" : ""}`,
        "aria-pressed": String(state.selectedNode === node.node_id),
        onclick: () => { state.selectedNode = node.node_id; render(); },
      },
      el("span", { class: "node-path", text: node.node_id }),
      el("span", { class: "node-question", text: node.question }),
      el("span", { class: `chip node-${node.status}`, "data-status": node.status, text: NODE_LABEL[node.status] || node.status })),
      (children[node.node_id] || []).length ? el("ul", {}, ...children[node.node_id].map(branch)) : null);
    tree.replaceChildren(...(children[""] || []).map(branch));
  }

  function renderNodeDetail() {
    const box = $("node-detail");
    const node = state.run && state.run.nodes.find((n) => n.node_id === state.selectedNode);
    if (!node) return box.replaceChildren();
    const parts = [el("h3", { text: `${node.node_id} · ${node.question}` })];
    if (node.rationale) parts.push(el("p", { class: "muted small", text: node.rationale }));
    if (node.sufficiency) parts.push(el("p", { text: node.sufficiency.reasoning }));
    if (node.findings.length) parts.push(el("ul", { class: "findings" }, ...node.findings.map((f) => findingItem(node, f))));
    if (node.error) parts.push(el("p", { class: "file-error", text: node.error }));
    const slice = node.context_slice;
    if (slice) parts.push(el("p", { class: "muted small", text: `Context: ${plural(slice.selected_items_count, "item")} (${slice.mode.replace(/_/g, " ")}). ${slice.selection_reason}` }));
    box.replaceChildren(...parts);
  }

  function resultTitle(node, n) {
    const result = node.results.find((r) => r.n === n);
    return result ? `${result.title}, ${result.location}` : "";
  }

  // A finding, its [n] marks, and the library pages it cites (each opening its pinned version).
  function findingItem(node, finding) {
    const links = finding.source_links || [];
    const sources = finding.citations.map((n) => {
      const result = node.results.find((r) => r.n === n);
      const link = result && result.source_url && links.find((l) => l.source_url === result.source_url);
      return link ? el("span", { class: "finding-source", "data-n": n },
        citationButton(link, sid), originNote(link, sid)) : null;
    }).filter(Boolean);
    return el("li", {},
      finding.text, " ",
      ...finding.citations.map((n) => el("span", { class: "citation", text: `[${n}]`, title: resultTitle(node, n) })),
      sources.length ? el("div", { class: "sources finding-sources" }, ...sources) : null);
  }

  // The report is drawn again only when it changed: a refresh that brings the same report
  // must not replace the citation the reader is on (focus and scroll stay put).
  let drawnReport = null;
  function renderReport() {
    const run = state.run;
    const key = JSON.stringify(run ? [run.run_id, run.status, run.error, run.report, run.coverage] : null);
    if (key === drawnReport) return;
    drawnReport = key;
    drawReport();
  }

  function drawReport() {
    const view = $("report-view");
    const run = state.run;
    $("report-meta").textContent = "";
    showDownloads(run && run.report ? run.run_id : null);
    if (!run) return view.replaceChildren(el("p", { class: "empty-state", text: "No run selected." }));
    const report = run.report;
    if (!report) {
      const text = run.status === "failed" ? `The run failed: ${run.error}` : run.status === "cancelled"
        ? "The run was cancelled before its report." : "The report appears here when the run has explored its question.";
      return view.replaceChildren(...[el("p", { class: "empty-state", text }), coverageSection(run.coverage)].filter(Boolean));
    }
    $("report-meta").textContent = report.provider === "offline" ? "offline extractive mode" : `${report.provider} · ${report.model}`;
    const parts = [el("h3", { class: "report-title", text: report.title }), sourcesChanged(report.sources_changed, run),
      updateSummary(report.update), el("p", { class: "report-summary", text: report.summary })];
    const referenceOf = new Map(report.references.map((r) => [r.n, r]));
    const cited = new Set(report.sections.flatMap((s) => s.paragraphs.flatMap((p) => p.citations)));
    for (const section of report.sections) {
      parts.push(el("section", { class: "report-section" },
        el("h4", { text: section.heading }),
        ...section.paragraphs.flatMap((p) => {
          const links = linksByRef(p.source_links);
          return [el("p", { class: p.update ? `updated-paragraph ${p.update.status}` : null },
            p.text, " ",
            ...p.citations.map((n) => citationMark(n, referenceOf.get(n))),
            ...p.sources.map((ref) => citationButton(links[ref], sid, { ref }))), updateMarker(p.update)];
        })));
    }
    if (report.open_questions.length) {
      parts.push(el("section", { class: "report-section" }, el("h4", { text: "Open questions" }),
        el("ul", {}, ...report.open_questions.map((q) => el("li", { text: q })))));
    }
    // The references the text cites; those the run read but the text never cites come apart, as such.
    const referenceList = (references) => el("ol", {}, ...references.map((r) => el("li", { id: `ref-${r.n}`, value: r.n },
      r.url && /^https?:\/\//.test(r.url)
        ? el("a", { href: r.url, rel: "noopener noreferrer", target: "_blank", text: r.title })
        : el("span", { text: `${r.title}, ${r.location}` }),
      originNote(r, sid),
      r.sourceref ? [" ", citationButton(r.source_url ? r : null, sid, { ref: r.sourceref })] : null)));
    const citedReferences = report.references.filter((r) => cited.has(r.n));
    const uncited = report.references.filter((r) => !cited.has(r.n));
    if (citedReferences.length) {
      parts.push(el("section", { class: "report-section references" }, el("h4", { text: "References" }), referenceList(citedReferences)));
    }
    if (uncited.length) {
      parts.push(el("section", { class: "report-section references uncited" },
        el("h4", { text: "Also read, not cited in the text" }), referenceList(uncited)));
    }
    if (report.dropped.length) parts.push(el("p", { class: "muted small", text: `Validation removed ${plural(report.dropped.length, "unsupported citation")}.` }));
    parts.push(coverageSection(run.coverage));
    view.replaceChildren(...parts.filter(Boolean));
  }

  // What the run looked at (its coverage record): every file of the session once, cited, read or
  // not reached, and the other sessions' files it drew on. A file opens through its citation object.
  const COVERAGE_LABEL = {
    cited: "Cited", read: "Read, not cited", not_reached: "Not reached", error: "In error", parsing: "Still parsing at run start",
  };
  const SHOWN_LOCATIONS = 4;
  function coverageSection(coverage) {
    if (!coverage) return null;
    const c = coverage.counts;
    const counts = [`${c.cited} cited`, `${c.read} read`, `${c.not_reached} not reached`];
    if (c.error) counts.push(`${c.error} in error`);
    if (c.parsing) counts.push(`${c.parsing} still parsing`);
    const where = (entry) => {
      if (entry.state === "error") return entry.error || "";
      const shown = entry.locations.slice(0, SHOWN_LOCATIONS).join(", ");
      const more = entry.locations.length - SHOWN_LOCATIONS;
      return more > 0 ? `${shown} and ${more} more` : shown;
    };
    return el("section", { id: "report-coverage", class: "report-section coverage", "aria-labelledby": "coverage-heading" },
      // A running run's record so far (`final` false) grows as its nodes end.
      el("h4", { id: "coverage-heading", text: coverage.final === false ? "What the run has read so far" : "What the run read" }),
      el("p", { class: "coverage-counts small", text: counts.join(" · ") }),
      el("table", { class: "coverage-table" },
        el("thead", {}, el("tr", {}, el("th", { text: "File" }), el("th", { text: "State" }), el("th", { text: "Where" }))),
        el("tbody", {}, ...coverage.files.map((entry) => el("tr", { "data-filename": entry.filename, "data-state": entry.state },
          el("td", {}, citationButton(entry.citation, sid, { label: entry.filename }),
            originNote(entry.citation || { origin_session: entry.origin_session }, sid)),
          el("td", {}, el("span", { class: `coverage-state ${entry.state}`, text: COVERAGE_LABEL[entry.state] || entry.state })),
          el("td", { class: "muted", text: where(entry) }))))));
  }

  // The report's files (Markdown, Word, PDF): plain download links to the run's export endpoints.
  function showDownloads(runId) {
    $("report-downloads").hidden = !runId;
    for (const link of document.querySelectorAll("#report-downloads a")) {
      if (runId) link.href = `/api/runs/${runId}/report.${link.dataset.kind}`;
      else link.removeAttribute("href");
    }
  }

  // An [n] mark: opens the text it cites (its pinned version) and marks its reference; a web
  // reference (no stored text) is scrolled to instead, by the link itself.
  function citationMark(n, reference) {
    return el("a", {
      class: "citation", href: `#ref-${n}`, text: `[${n}]`,
      title: reference ? `${reference.title}, ${reference.location}` : "",
      onclick: (event) => {
        for (const item of document.querySelectorAll("#report-view .references li.targeted")) item.classList.remove("targeted");
        const item = document.getElementById(`ref-${n}`);
        if (item) item.classList.add("targeted");
        if (reference && reference.source_url) {
          event.preventDefault();
          openCitation(reference, sid);
        }
      },
    });
  }

  function renderDebug() {
    const box = $("run-debug");
    box.hidden = !(uiDebug() && state.debug);
    if (box.hidden) return;
    $("run-debug-title").textContent = state.debug.title;
    $("run-debug-view").textContent = JSON.stringify(state.debug.body, null, 2);
  }

  const uiDebug = () => $("ui-debug-toggle").checked;

  // --- sources ---------------------------------------------------------------------

  // The files this report cites that were replaced or deleted since it was written.
  function sourcesChanged(changed, run) {
    if (!changed || !changed.length) return null;
    const what = (c) => c.status === "deleted" ? `deleted (${formatDate(c.changed_at)})` : `superseded by a newer upload (${formatDate(c.changed_at)})`;
    return el("section", { class: "sources-changed", role: "note", "aria-labelledby": "sources-changed-heading" },
      el("h4", { id: "sources-changed-heading", text: "Sources changed since this report" }),
      el("p", { class: "small" }, "Its citations still open the text they were made from. ",
        el("button", { type: "button", class: "update-report", text: "Update report",
          title: "Re-check the claims citing these files against their new text, in a new run; this report stays as it is",
          onclick: (event) => updateReport(event.currentTarget, run) })),
      el("ul", {}, ...changed.map((c) => el("li", { "data-filename": c.filename, "data-status": c.status },
        el("span", { class: "file-name", text: c.filename }), ` — ${what(c)}`))));
  }

  // An updated report (POST /api/runs/{rid}/update): what changed, at its top; a withdrawn claim
  // opens its old sentence and the text it cited.
  const UPDATE_LABEL = { changed: "Changed", withdrawn: "Withdrawn", new: "New from the changed files" };
  function updateSummary(update) {
    if (!update) return null;
    const withdrawn = update.claims.filter((c) => c.status === "withdrawn");
    return el("section", { class: "update-summary", role: "note", "aria-labelledby": "update-summary-heading" },
      el("h4", { id: "update-summary-heading", text: "Updated report" }),
      el("p", { class: "small" }, `An update of `,
        el("button", { type: "button", class: "link-button", text: "the earlier report", onclick: () => {
          renderRunOptions(update.updates_run);
          selectRun(update.updates_run);
        } }),
        `, re-checked against ${update.changed_files.map((f) => `${f.filename} (${f.status})`).join(", ")}: `),
      el("p", { class: "update-counts", text: `${update.summary}.` }),
      withdrawn.length ? el("ul", { class: "withdrawn-claims" }, ...withdrawn.map((c) => el("li", {}, updateMarker(c)))) : null);
  }

  // A paragraph's marker: opens the old sentence, the text it cited then and the text it cites now.
  function updateMarker(change) {
    if (!change) return null;
    const row = (label, text) => text ? el("div", { class: "update-row" }, el("span", { class: "muted small", text: label }), el("blockquote", { text })) : null;
    const title = change.status === "withdrawn" ? `Withdrawn: “${change.old_text.slice(0, 80)}”` : UPDATE_LABEL[change.status] || change.status;
    return el("details", { class: `update-marker ${change.status}` },
      el("summary", { text: title }),
      row("Before", change.old_text),
      row("Cited before", change.old_cited_text),
      row("Now", change.new_text),
      row("Cited now", change.new_cited_text));
  }

  async function updateReport(button, run) {
    button.disabled = true;
    showError(null);
    try {
      const answer = await requestJson("POST", `/api/runs/${run.run_id}/update`);
      if (!answer.run_id) {
        button.replaceWith(el("span", { class: "muted small", text: `Nothing to update: ${answer.message}.` }));
        return;
      }
      upsertSummary(answer); // its run.created may have come first
      renderRunOptions(answer.run_id);
      await selectRun(answer.run_id);
    } catch (error) {
      showError(error.message);
      button.disabled = false;
    }
  }

  // A file of this session changed (the Context tab says so), or the tab is shown again:
  // the report's sources_changed is read anew.
  let staleTimer = null;
  function rereadReport() {
    clearTimeout(staleTimer);
    staleTimer = setTimeout(() => {
      const runId = selectedRunId();
      if (runId && state.run && state.run.report) refreshRun(runId);
    }, 300);
  }

  // --- wiring ----------------------------------------------------------------------

  $("run-form").addEventListener("submit", startRun);
  $("cancel-run").addEventListener("click", cancelRun);
  $("run-select").addEventListener("change", () => selectRun(selectedRunId()));
  $("ui-debug-toggle").addEventListener("change", renderDebug);
  document.addEventListener("groundwork:context-changed", rereadReport);
  $("tab-research").addEventListener("click", rereadReport);

  renderRunOptions(state.runs[0] && state.runs[0].run_id);
  render();
  if (state.runs.length) selectRun(state.runs[0].run_id);
  // Runs started by anyone in this session appear here; a reconnect catches up with the list.
  let sessionSocketOpened = false;
  Groundwork.liveSocket(`/ws/sessions/${sid}/runs/`, {
    onOpen: () => { if (sessionSocketOpened) refreshRunList(); sessionSocketOpened = true; },
    onMessage: onSessionRun,
    onState: (live) => { $("run-select").dataset.live = live; },
  });
})();
