// The Context tab. The server renders the file list, its chips, the banner and the parse controls
// (templates/context/_files.html), with the page and live: /ws/sessions/{sid}/context/pane/ sends
// their fragments, rendered from every manifest. Here: uploads with their progress, Replace, the
// forms' If-Match (one writer per tab), and the parsed-context pane.
// Everything a user or a model wrote is put on the page with textContent, never innerHTML.
(function () {
  "use strict";

  const boot = JSON.parse(document.getElementById("bootstrap").textContent);
  const sid = boot.session.session_id;
  const base = `/api/sessions/${sid}/context`;
  const KIND_ORDER = ["fact", "definition", "constraint", "analysis", "case", "lead", "conflict"];
  const KIND_LABEL = {
    fact: "Facts", definition: "Definitions", constraint: "Constraints", analysis: "Analyses",
    case: "Cases", lead: "Leads", conflict: "Conflicts",
  };

  const state = {
    manifest: boot.manifest,
    uiDebug: boot.ui_debug,
    tab: "aggregate",
    selectedFileId: null,
    aggregate: null, // {revision, digest, ...} last fetched
    fileDigest: null,
    preview: null, // {file_id, filename, spans}, or a resolved citation {version, filename, spans, status, …}
    highlight: null, // span id to highlight in the preview
    showJson: false,
  };

  const $ = (id) => document.getElementById(id);
  const { el, ApiError } = Groundwork;

  // --- API -----------------------------------------------------------------

  // Context mutations name the revision they were made against (412 when it moved on).
  const ifMatch = () => ({ "If-Match": `"${state.manifest.revision}"` });

  // One writer per tab: mutations run one after another, each with the newest
  // revision in If-Match, so a tab never trips over its own earlier upload.
  let writes = Promise.resolve();
  function serialised(task) {
    const run = writes.then(task, task);
    writes = run.catch(() => {});
    return run;
  }

  function api(method, path, body) {
    return method === "GET" ? request(method, path) : serialised(() => request(method, path, body));
  }

  function request(method, path, body) {
    return Groundwork.requestJson(method, path, { body, headers: ifMatch() });
  }

  // XHR, not fetch: only XHR reports upload progress.
  function uploadWithProgress(method, path, field, file, onProgress) {
    return serialised(() => new Promise((resolve, reject) => {
      const xhr = new XMLHttpRequest();
      xhr.open(method, path);
      const headers = Groundwork.mutationHeaders({ ...ifMatch(), Accept: "application/json" });
      for (const [name, value] of Object.entries(headers)) {
        xhr.setRequestHeader(name, value);
      }
      xhr.upload.onprogress = (event) => event.lengthComputable && onProgress(event.loaded / event.total);
      xhr.onload = () => {
        let data = null;
        try { data = JSON.parse(xhr.responseText); } catch (e) { /* not JSON */ }
        if (xhr.status >= 200 && xhr.status < 300) resolve(data);
        else reject(new ApiError(xhr.status, data));
      };
      xhr.onerror = () => reject(new ApiError(0, { error: "network error: the upload did not reach the server" }));
      const form = new FormData();
      for (const one of [].concat(file)) form.append(field, one, one.name);
      xhr.send(form);
    }));
  }

  async function mutate(action) {
    try {
      const result = await action();
      if (result && result.manifest_seq !== undefined) showManifest(result);
      refreshPane();  // what the mutation changed, rendered (a tab deaf to the socket sees it too)
      return result;
    } catch (error) {
      if (error.status === 412) {
        flash("This context changed in another tab — refreshed");
        await refreshPane();
      } else {
        flash(error.message, true);
      }
      return null;
    }
  }

  // --- state updates ---------------------------------------------------------

  // The session's files changed: what else the page shows from them (a report's
  // "Sources changed") is read anew by whoever listens.
  function announceChange(before) {
    if (state.manifest.revision > before) document.dispatchEvent(new CustomEvent("groundwork:context-changed"));
  }

  // Every manifest (a mutation's answer, a push, a GET) is numbered in the order the
  // server read it (manifest_seq): one read earlier but arriving later is older news,
  // and showing it would move a chip backwards (Ready → Parsing → Ready).
  function showManifest(manifest) {
    if (manifest.manifest_seq <= state.manifest.manifest_seq) return false;
    const before = state.manifest.revision;
    state.manifest = manifest;
    render();
    announceChange(before);
    return true;
  }

  // The file list's fragments, from the socket or a GET: shown unless the list shows a later manifest.
  let paneSeq = -1;
  function showPane(message) {
    if (message.manifest.manifest_seq > paneSeq) {
      paneSeq = message.manifest.manifest_seq;
      Groundwork.swapFragments(message.html);
      markSelected();
    }
    if (showManifest(message.manifest)) refreshDigests();
  }

  async function refreshPane() {
    try {
      showPane(await api("GET", `/sessions/${sid}/context/pane/`));
    } catch (error) {
      flash(error.message, true);
    }
  }

  async function refreshDigests() {
    if (!state.uiDebug) return;
    if (state.tab === "aggregate") await loadAggregate();
    if (state.tab === "file" && state.selectedFileId) await loadFileDigest(state.selectedFileId);
  }

  async function loadAggregate() {
    const m = state.manifest;
    if (!m.aggregate_digest_ref) {
      state.aggregate = null;
      return renderDigestPane();
    }
    const wanted = `${m.aggregate_digest_ref}:${m.aggregate_revision}`;
    if (state.aggregate && state.aggregateKey === wanted) return renderDigestPane();
    try {
      state.aggregate = await api("GET", `${base}/digest`);
      state.aggregateKey = wanted;
    } catch (error) {
      state.aggregate = null;
      state.aggregateKey = null;
    }
    renderDigestPane();
  }

  async function loadFileDigest(fileId) {
    const file = fileById(fileId);
    if (!file) return;
    if (state.fileDigest && state.fileDigest.file_id === fileId && state.fileDigest.digest_hash === file.digest_hash) {
      return renderDigestPane();
    }
    try {
      state.fileDigest = await api("GET", file.digest_url);
    } catch (error) {
      state.fileDigest = { file_id: fileId, missing: error.message };
    }
    renderDigestPane();
  }

  async function openPreview(fileId, spanId) {
    const file = fileById(fileId);
    if (!file) return flash("That file is no longer in this context.", true);
    // The raw text is the user's own file, not a debug view: without the parsed-context
    // pane it opens in the page's source dialog.
    if (!state.uiDebug) {
      return Groundwork.openSourceDialog(file.filename, async () => {
        const preview = await api("GET", file.preview_url);
        return { title: `${preview.filename} · raw preview`, spans: preview.spans, highlight: spanId || null, empty: noTextYet(file) };
      }, sid);
    }
    state.selectedFileId = fileId;
    state.highlight = spanId || null;
    if (!state.preview || state.preview.file_id !== fileId || state.preview.spans_hash !== file.spans_hash) {
      state.preview = await api("GET", file.preview_url);
      state.preview.spans_hash = file.spans_hash;
    }
    selectTab("preview");
  }

  // --- rendering ---------------------------------------------------------------

  function fileById(id) {
    return state.manifest.files.find((f) => f.file_id === id);
  }

  function render() {
    $("context-tab").classList.toggle("no-digest", !state.uiDebug);
    $("digest-pane").hidden = !state.uiDebug;
    $("ui-debug-toggle").checked = state.uiDebug;
    markSelected();
  }

  // The row of the file whose digest or text the parsed-context pane shows.
  function markSelected() {
    for (const row of $("file-rows").rows) row.classList.toggle("selected", row.dataset.fileId === state.selectedFileId);
  }

  function selectTab(tab) {
    state.tab = tab;
    for (const button of document.querySelectorAll(".digest-pane [role=tab]")) {
      button.setAttribute("aria-selected", String(button.dataset.tab === tab));
    }
    markSelected();
    if (tab === "aggregate") loadAggregate();
    else if (tab === "file" && state.selectedFileId) loadFileDigest(state.selectedFileId);
    else renderDigestPane();
  }

  function renderDigestPane() {
    const view = $("digest-view");
    const views = { aggregate: aggregateView, file: fileDigestView, preview: previewView };
    view.replaceChildren(...views[state.tab]().filter(Boolean));
    if (state.tab === "preview") Groundwork.scrollToHighlight(view);
  }

  function aggregateView() {
    const m = state.manifest;
    const a = state.aggregate;
    const failure = m.aggregate_digest_status === "error" && m.aggregate_error
      ? el("p", { class: "file-error", role: "alert", text: `The aggregate digest failed: ${m.aggregate_error.message}` })
      : null;
    if (!a) {
      if (failure) return [failure];
      const why = m.files.length ? "No aggregate digest yet: press Parse now." : "Upload files to build a digest.";
      return [el("p", { class: "empty-state", text: m.aggregate_digest_status === "parsing" ? "Building the aggregate digest…" : why })];
    }
    const current = a.revision === m.revision && m.aggregate_digest_status === "ready";
    const meta = el("div", { class: "digest-meta" },
      current
        ? el("span", { class: "badge", text: `current · revision ${a.revision}` })
        : el("span", { class: "badge outdated", "data-outdated": "true", text: `out of date: built for revision ${a.revision}, context is at ${m.revision}` }),
      providerBadge(a),
    );
    return [failure, meta, ...digestBody(a.digest, a)];
  }

  function fileDigestView() {
    const file = state.selectedFileId && fileById(state.selectedFileId);
    if (!file) return [el("p", { class: "empty-state", text: "Choose View digest on a file." })];
    const d = state.fileDigest;
    const heading = el("h3", { text: file.filename });
    if (!d || d.file_id !== file.file_id) return [heading, el("p", { class: "empty-state", text: "Loading…" })];
    if (d.missing) return [heading, el("p", { class: "empty-state", text: d.missing })];
    const current = d.digest_hash === file.digest_hash;
    const meta = el("div", { class: "digest-meta" },
      current ? el("span", { class: "badge", text: "current" }) : el("span", { class: "badge outdated", text: "out of date" }),
      providerBadge(d));
    return [heading, meta, ...digestBody(d.digest, d)];
  }

  function providerBadge(record) {
    const offline = record.provider === "offline";
    return el("span", { class: "badge", text: offline ? "offline extractive mode" : `${record.provider} · ${record.model}` });
  }

  function digestBody(digest, record) {
    const toggle = el("button", {
      type: "button", class: "json-toggle", "aria-pressed": String(state.showJson),
      text: state.showJson ? "Show cards" : "Show JSON",
      onclick: () => { state.showJson = !state.showJson; renderDigestPane(); },
    });
    if (state.showJson) return [toggle, el("pre", { class: "json-view", text: JSON.stringify(digest, null, 2) })];
    const parts = [toggle, el("p", { class: "digest-summary", text: digest.summary })];
    const byKind = {};
    for (const fact of digest.facts || []) (byKind[fact.kind || "fact"] ||= []).push(fact);
    for (const kind of KIND_ORDER.filter((k) => byKind[k])) {
      parts.push(el("section", { class: "fact-group", "data-kind": kind },
        el("h3", { text: `${KIND_LABEL[kind]} (${byKind[kind].length})` }),
        ...byKind[kind].map((fact) => el("article", { class: "fact" },
          el("p", { text: fact.claim }),
          el("div", { class: "sources" },
            fact.reliability ? el("span", { class: `badge ${fact.reliability}`, title: fact.reliability_note || "", text: `${fact.reliability} reliability` }) : null,
            ...fact.sources.map((ref) => sourceLink(ref, record)))))));
    }
    if ((digest.uncertainties || []).length) {
      parts.push(el("section", { class: "fact-group", "data-kind": "uncertainties" },
        el("h3", { text: `Uncertainties (${digest.uncertainties.length})` }),
        ...digest.uncertainties.map((u) => el("article", { class: "fact" },
          el("p", { text: u.text }), el("div", { class: "sources" }, ...(u.sources || []).map((ref) => sourceLink(ref, record)))))));
    }
    if (record.dropped && record.dropped.length) {
      parts.push(el("p", { class: "muted small", text: `Validation removed ${record.dropped.length} unsupported item(s).` }));
    }
    return parts;
  }

  // A digest's SourceRef opens the version the digest was built from (its source_links),
  // in the Raw preview, never whatever file now has that name.
  function sourceLink(ref, record) {
    const link = (record.source_links || {})[ref];
    if (!link || !link.source_url) {
      return el("span", { class: "source-ref unresolved", "data-source": ref, title: "No stored text version for this source", text: ref });
    }
    return el("button", {
      type: "button", class: "source-link", "data-source": ref, "data-version": link.version, text: ref,
      title: `Open ${ref}`, onclick: () => openCitation(link),
    });
  }

  let opening = 0;
  async function openCitation(link) {
    const ticket = ++opening;
    try {
      const source = await Groundwork.resolveCitation(link);
      if (ticket !== opening) return;
      // The row of the file whose current text this is (none for an older or deleted version).
      const file = source.status === "current" && source.origin_session.id === sid
        && state.manifest.files.find((f) => f.filename === source.filename && f.extracted_text_hash === source.extracted_text_hash);
      state.selectedFileId = file ? file.file_id : state.selectedFileId;
      state.preview = { ...source, file_id: file ? file.file_id : null, resolved: true };
      state.highlight = source.span_id;
      selectTab("preview");
    } catch (error) {
      if (ticket === opening) flash(error.message, true);
    }
  }

  function previewView() {
    const p = state.preview;
    if (!p) return [el("p", { class: "empty-state", text: "Choose Preview on a file, or click a source." })];
    const meta = p.resolved ? el("div", { class: "source-meta provenance", "data-status": p.status }, ...Groundwork.provenanceBadges(p, sid)) : null;
    const spans = p.spans.length ? Groundwork.spanList(p.spans, state.highlight)
      : [el("p", { class: "empty-state", text: noTextYet(fileById(p.file_id)) })];
    return [el("h3", { text: p.filename }), meta, ...spans];
  }

  // A preview with no text says why, rather than show a title over nothing.
  function noTextYet(file) {
    if (file && file.error) return [file.error.message, file.error.help].filter(Boolean).join(". ");
    return "No text has been read from this file yet: it shows here once it is parsed.";
  }

  let flashTimer;
  function flash(message, isError) {
    const box = $("flash");
    box.textContent = message;
    box.classList.toggle("error", Boolean(isError));
    box.hidden = false;
    clearTimeout(flashTimer);
    flashTimer = setTimeout(() => { box.hidden = true; }, 8000);
  }

  // --- actions -----------------------------------------------------------------

  // A row of #upload-progress, from the page's template: the file's name, and its progress bar.
  function uploadRow(label, name) {
    const row = $("upload-row-template").content.firstElementChild.cloneNode(true);
    row.dataset.upload = name;
    row.querySelector(".name").textContent = label;
    row.querySelector("progress").setAttribute("aria-label", label === name ? `Uploading ${name}` : label);
    $("upload-progress").append(row);
    return row;
  }

  // An upload that failed keeps its row, saying why, until it is dismissed.
  function showUploadFailed(row, message) {
    const name = row.dataset.upload;
    const failed = $("upload-failed-template").content.cloneNode(true);
    failed.querySelector(".dismiss").setAttribute("aria-label", `Dismiss ${name}`);
    failed.querySelector(".dismiss").addEventListener("click", () => row.remove());
    failed.querySelector(".failed").textContent = `${name}: ${message}`;
    row.querySelector("progress").replaceWith(failed);
  }

  async function uploadFiles(fileList) {
    const files = Array.from(fileList);
    if (!files.length) return;
    // One request for the whole selection (one revision, one diff in the banner);
    // multipart sends the files in order, so sent bytes tell each file's progress.
    let offset = 0;
    const bars = files.map((file) => {
      const row = uploadRow(file.name, file.name);
      const entry = { bar: row.querySelector("progress"), row, start: offset, size: Math.max(file.size, 1) };
      offset += file.size;
      return entry;
    });
    const onProgress = (share) => {
      const sent = share * offset;
      for (const b of bars) b.bar.value = Math.min(1, Math.max(0, (sent - b.start) / b.size));
    };
    try {
      const result = await uploadWithProgress("POST", `${base}/files`, "files", files, onProgress);
      for (const b of bars) b.bar.value = 1;
      showManifest(result);
      refreshPane();
      if (state.manifest.auto_parse) flash("Uploaded; parsing starts automatically.");
      setTimeout(() => bars.forEach((b) => b.row.remove()), 1200);
    } catch (error) {
      if (error.status === 412) {
        await refreshPane();
        flash("This context changed in another tab — refreshed");
      }
      const message = error.status === 412 ? "not uploaded: upload again" : error.message;
      for (const b of bars) showUploadFailed(b.row, message);
    }
  }

  let replaceTarget = null;
  function pickReplacement(fileId) {
    replaceTarget = fileId;
    $("replace-input").click();
  }

  async function replaceFile(fileId, file) {
    const row = uploadRow(`Replacing with ${file.name}`, file.name);
    const bar = row.querySelector("progress");
    await mutate(() => uploadWithProgress("PUT", `${base}/files/${fileId}`, "file", file, (s) => { bar.value = s; }));
    row.remove();
  }

  function viewDigest(fileId) {
    state.selectedFileId = fileId;
    if (!state.uiDebug) return flash("Turn on “Show parsed context” to see digests.");
    selectTab("file");
  }

  // A row's buttons; its Retry and Delete are forms (below).
  $("file-rows").addEventListener("click", (event) => {
    const action = event.target.closest("[data-action]");
    if (!action) return;
    const fileId = action.closest("tr").dataset.fileId;
    if (action.dataset.action === "digest") viewDigest(fileId);
    else if (action.dataset.action === "replace") pickReplacement(fileId);
    else if (action.dataset.action === "preview") {
      event.preventDefault();  // without script it is a link to the file's text
      openPreview(fileId);
    }
  });

  // The file list's forms ("METHOD /context/…" in data-context-api) go through the tab's one writer,
  // with the newest revision as If-Match; without script they post to the page (context_app.pages).
  document.addEventListener("submit", (event) => {
    const form = event.target;
    if (!form.matches("form[data-context-api]")) return;
    event.preventDefault();
    if (form.dataset.confirm && !window.confirm(form.dataset.confirm)) return;
    const [method, path] = form.dataset.contextApi.split(" ");
    const body = Groundwork.formJson(form);
    delete body.revision;
    const fileRow = form.closest("tr");
    if (method === "DELETE" && fileRow && fileRow.dataset.fileId === state.selectedFileId) state.selectedFileId = null;
    mutate(() => api(method, `/api/sessions/${sid}${path}`, Object.keys(body).length ? body : undefined));
  });

  // --- live updates --------------------------------------------------------------

  function connect() {
    Groundwork.liveSocket(`/ws/sessions/${sid}/context/pane/`, {
      onState: (live) => { document.body.dataset.live = live; },
      onMessage: showPane,
    });
  }

  // --- wiring --------------------------------------------------------------------

  $("file-input").addEventListener("change", (event) => {
    uploadFiles(event.target.files);
    event.target.value = "";
  });
  $("replace-input").addEventListener("change", (event) => {
    const file = event.target.files[0];
    if (file && replaceTarget) replaceFile(replaceTarget, file);
    event.target.value = "";
  });
  const zone = $("dropzone");
  zone.addEventListener("dragover", (event) => { event.preventDefault(); zone.classList.add("dragover"); });
  zone.addEventListener("dragleave", () => zone.classList.remove("dragover"));
  zone.addEventListener("drop", (event) => {
    event.preventDefault();
    zone.classList.remove("dragover");
    if (event.dataTransfer && event.dataTransfer.files.length) uploadFiles(event.dataTransfer.files);
  });
  zone.addEventListener("keydown", (event) => {
    if (event.key === "Enter" || event.key === " ") { event.preventDefault(); $("file-input").click(); }
  });
  $("ui-debug-toggle").addEventListener("change", async (event) => {
    const wanted = event.target.checked;
    try {
      const result = await api("PATCH", "/api/me/preferences", { ui_debug: wanted });
      state.uiDebug = result.ui_debug;
    } catch (error) {
      flash(error.message, true);
    }
    render();
    refreshDigests();
  });
  for (const button of document.querySelectorAll(".digest-pane [role=tab]")) {
    button.addEventListener("click", () => selectTab(button.dataset.tab));
  }

  render();
  selectTab("aggregate");
  connect();
})();
