// The Context tab: file list, uploads, parsing controls and the parsed-context pane.
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
      return result;
    } catch (error) {
      if (error.status === 412) {
        flash("This context changed in another tab — refreshed");
        await refreshManifest();
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

  function applyUpdate(message) {
    const { type, ...manifest } = message;
    if (showManifest(manifest)) refreshDigests();
  }

  async function refreshManifest() {
    if (showManifest(await api("GET", base))) refreshDigests();
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


  function chipFor(file) {
    const diff = state.manifest.last_diff || {};
    const touched = (diff.items || []).find((item) => item.file_id === file.file_id);
    if (touched && touched.change === "unchanged" && file.digest_status !== "parsing") {
      return ["unchanged", "Unchanged"];
    }
    const labels = { ready: "Ready", parsing: "Parsing", stale: "Stale", error: "Error" };
    return [file.digest_status, labels[file.digest_status] || file.digest_status];
  }

  function formatSize(bytes) {
    if (bytes < 1024) return `${bytes} B`;
    if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KB`;
    return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
  }

  function formatTime(iso) {
    const date = new Date(iso);
    return date.toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" });
  }

  function render() {
    const m = state.manifest;
    $("revision-label").textContent = `revision ${m.revision}`;
    $("auto-parse").checked = m.auto_parse;
    renderFiles();
    renderBanner();
    $("context-tab").classList.toggle("no-digest", !state.uiDebug);
    $("digest-pane").hidden = !state.uiDebug;
    $("ui-debug-toggle").checked = state.uiDebug;
    const busy = m.files.some((f) => f.digest_status === "parsing") || m.aggregate_digest_status === "parsing";
    const pending = m.files.some((f) => f.digest_status === "stale") || m.aggregate_digest_status === "stale";
    const failedAggregate = m.aggregate_digest_status === "error" && m.files.some((f) => f.digest_status === "ready");
    $("parse-now").disabled = busy || !(pending || failedAggregate);
  }

  function renderFiles() {
    const rows = $("file-rows");
    const files = state.manifest.files;
    $("no-files").hidden = files.length > 0;
    rows.closest("table").hidden = files.length === 0;
    rows.replaceChildren(
      ...files.map((file) => {
        const [chipClass, chipLabel] = chipFor(file);
        // A file without a digest offers no View digest; a failed file offers Retry only when
        // trying again can help (the server says: a provider's outage can, an unsupported format cannot).
        const actions = el("div", { class: "actions" },
          file.digest_ref
            ? el("button", { type: "button", text: "View digest", "aria-label": `View digest of ${file.filename}`, onclick: () => viewDigest(file.file_id) })
            : null,
          el("button", { type: "button", text: "Preview", "aria-label": `Preview ${file.filename}`, onclick: () => openPreview(file.file_id) }),
          el("button", { type: "button", text: "Replace", "aria-label": `Replace ${file.filename}`, onclick: () => pickReplacement(file.file_id) }),
          el("a", { class: "button", href: file.download_url, text: "Download", "aria-label": `Download ${file.filename}` }),
          file.digest_status === "error" && file.error && file.error.retryable
            ? el("button", { type: "button", text: "Retry", "aria-label": `Retry ${file.filename}`, onclick: () => retryFile(file.file_id) })
            : null,
          el("button", { type: "button", text: "Delete", "aria-label": `Delete ${file.filename}`, onclick: () => deleteFile(file) }),
        );
        return el("tr", { "data-file-id": file.file_id, "data-filename": file.filename, class: file.file_id === state.selectedFileId ? "selected" : null },
          el("td", {},
            el("div", { class: "file-name", text: file.filename }),
            el("div", { class: "file-meta muted small" },
              el("span", { text: formatSize(file.size_bytes) }), " · ",
              el("time", { datetime: file.updated_at, text: formatTime(file.updated_at) })),
            file.error ? el("div", { class: "file-error", text: file.error.message }) : null,
            file.error && file.error.help ? el("div", { class: "file-help muted small", text: file.error.help }) : null,
            // A chip that moves back within one parse says why (the server re-queued the file).
            file.requeued_because && (file.digest_status === "stale" || file.digest_status === "parsing")
              ? el("div", { class: "file-note muted small", text: `Parsing again: ${file.requeued_because}.` }) : null,
            // What reading it has to say: "low OCR confidence on pages 3, 7", "no text on page 4".
            ...(file.notes || []).map((note) => el("div", { class: "file-note extraction-note muted small", text: `${note[0].toUpperCase()}${note.slice(1)}.` })),
            actions),
          statusCell(file, chipClass, chipLabel),
        );
      }),
    );
  }

  // The cell's markup is the page's (templates/research/_context_tab.html); only its values change here.
  function statusCell(file, chipClass, chipLabel) {
    const cell = $("file-status-template").content.firstElementChild.cloneNode(true);
    const chip = cell.querySelector(".chip");
    chip.classList.add(chipClass);
    chip.dataset.status = chipClass;
    // A long read says how it goes while it runs ("OCR page 12/80").
    chip.textContent = file.digest_status === "parsing" && file.extraction_progress ? file.extraction_progress : chipLabel;
    if (file.digest_detail) chip.title = file.digest_detail;
    // Vectors are made after the file is ready; search uses the ones that exist meanwhile.
    const meaning = cell.querySelector(".meaning-progress");
    meaning.hidden = !(file.meaning_embedded < file.meaning_windows);
    meaning.textContent = `indexing meaning ${file.meaning_embedded}/${file.meaning_windows}`;
    return cell;
  }

  function renderBanner() {
    const m = state.manifest;
    const diff = m.last_diff || {};
    const banner = $("banner");
    if (!diff.revision) return banner.replaceChildren();
    const changed = (diff.new || 0) + (diff.changed || 0) + (diff.deleted || 0);
    const busy = m.files.some((f) => f.digest_status === "parsing") || m.aggregate_digest_status === "parsing";
    const pending = m.files.some((f) => f.digest_status === "stale") || m.aggregate_digest_status === "stale";
    let text;
    if (changed === 0) {
      text = "No changes detected — using cached digest";
    } else {
      // last_diff sums every change since the last parse (the server keeps it), so the
      // counter is over those files: how many of them have their digest (or failed).
      const counts = `+${diff.new || 0} new, ~${diff.changed || 0} changed, -${diff.deleted || 0} deleted`;
      const failed = m.files.filter((f) => f.digest_status === "error").length;
      const toParse = (diff.items || []).filter((item) => item.change === "new" || item.change === "changed")
        .map((item) => fileById(item.file_id)).filter(Boolean);
      const parsed = toParse.filter((f) => f.digest_status === "ready" || f.digest_status === "error").length;
      if (busy) text = toParse.length ? `${counts} — parsing ${parsed}/${toParse.length}` : `${counts} — parsing…`;
      else if (pending) text = `${counts} — press Parse now to update the digests`;
      else if (failed) {
        const ready = m.files.filter((f) => f.digest_status === "ready").length;
        text = `${counts} — ${ready ? `${ready} up to date, ` : ""}${failed} ${failed === 1 ? "file" : "files"} failed to parse`;
      }
      else text = `${counts} — digests up to date`;
    }
    banner.textContent = text;
  }

  function selectTab(tab) {
    state.tab = tab;
    for (const button of document.querySelectorAll(".digest-pane [role=tab]")) {
      button.setAttribute("aria-selected", String(button.dataset.tab === tab));
    }
    renderFiles();
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

  async function uploadFiles(fileList) {
    const files = Array.from(fileList);
    if (!files.length) return;
    const list = $("upload-progress");
    // One request for the whole selection (one revision, one diff in the banner);
    // multipart sends the files in order, so sent bytes tell each file's progress.
    let offset = 0;
    const bars = files.map((file) => {
      const bar = el("progress", { max: "1", value: "0", "aria-label": `Uploading ${file.name}` });
      const row = el("li", { "data-upload": file.name }, el("span", { text: file.name }), bar);
      list.append(row);
      const entry = { bar, row, start: offset, size: Math.max(file.size, 1) };
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
      if (state.manifest.auto_parse) flash("Uploaded; parsing starts automatically.");
      setTimeout(() => bars.forEach((b) => b.row.remove()), 1200);
    } catch (error) {
      if (error.status === 412) {
        await refreshManifest();
        flash("This context changed in another tab — refreshed");
      }
      const message = error.status === 412 ? "not uploaded: upload again" : error.message;
      for (const b of bars) {
        const name = b.row.dataset.upload;
        b.bar.replaceWith(el("button", { type: "button", class: "dismiss", text: "Dismiss", "aria-label": `Dismiss ${name}`, onclick: () => b.row.remove() }));
        b.row.append(el("span", { class: "failed", role: "alert", text: `${name}: ${message}` }));
      }
    }
  }

  let replaceTarget = null;
  function pickReplacement(fileId) {
    replaceTarget = fileId;
    $("replace-input").click();
  }

  async function replaceFile(fileId, file) {
    const list = $("upload-progress");
    const bar = el("progress", { max: "1", value: "0", "aria-label": `Replacing with ${file.name}` });
    const row = el("li", {}, el("span", { text: `Replacing with ${file.name}` }), bar);
    list.append(row);
    await mutate(async () => {
      const result = await uploadWithProgress("PUT", `${base}/files/${fileId}`, "file", file, (s) => { bar.value = s; });
      return result;
    });
    row.remove();
  }

  async function deleteFile(file) {
    if (!window.confirm(`Delete ${file.filename} from this context?`)) return;
    if (state.selectedFileId === file.file_id) state.selectedFileId = null;
    await mutate(() => api("DELETE", `${base}/files/${file.file_id}`));
  }

  async function retryFile(fileId) {
    await mutate(() => api("POST", `${base}/files/${fileId}/retry`));
  }

  function viewDigest(fileId) {
    state.selectedFileId = fileId;
    if (!state.uiDebug) return flash("Turn on “Show parsed context” to see digests.");
    selectTab("file");
  }

  // --- live updates --------------------------------------------------------------

  function connect() {
    Groundwork.liveSocket(`/ws/sessions/${sid}/context/`, {
      onOpen: refreshManifest,
      onState: (live) => { document.body.dataset.live = live; },
      onMessage: (message) => message.type === "context.updated" && applyUpdate(message),
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
  $("auto-parse").addEventListener("change", (event) => {
    mutate(() => api("PATCH", base, { auto_parse: event.target.checked }));
  });
  $("parse-now").addEventListener("click", () => mutate(() => api("POST", `${base}/parse`)));
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
