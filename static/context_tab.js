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
  const REFRESH_VIEW_MS = 200;  // a parse sends a burst of manifests: the pane is read once after it

  const state = {
    // The newest manifest this tab knows, as far as it needs one: its order, revision and auto-parse.
    manifest: boot.context_stamp,
    uiDebug: boot.ui_debug,
    // What the parsed-context pane shows (context_app.digest_view.Choice): the server renders it.
    tab: "aggregate",
    selectedFileId: null,
    version: "", // a cited span's exact version, in the Raw preview
    span: "", // the span to highlight there
    showJson: false,
  };

  const $ = (id) => document.getElementById(id);
  const { ApiError } = Groundwork;

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

  let viewTimer;
  function refreshDigests() {
    clearTimeout(viewTimer);
    viewTimer = setTimeout(loadView, REFRESH_VIEW_MS);
  }

  // The pane as the server renders it for the reader's choice; a later choice wins over an earlier
  // answer still on its way.
  let viewLoads = 0;
  async function loadView() {
    if (!state.uiDebug) return;
    const ticket = ++viewLoads;
    const query = new URLSearchParams({
      tab: state.tab, file: state.selectedFileId || "", version: state.version, span: state.span,
      json: state.showJson ? "1" : "",
    });
    const response = await fetch(`/sessions/${sid}/context/view/?${query}`);
    if (ticket !== viewLoads) return;
    if (!response.ok) return flash(`The parsed context could not be read (${response.status}).`, true);
    Groundwork.swapFragments(await response.text());
    const shownFile = $("digest-view").querySelector("[data-file-id]");  // the row of a cited span's current text
    if (shownFile) state.selectedFileId = shownFile.dataset.fileId;
    markSelected();
    if (state.tab === "preview") Groundwork.scrollToHighlight($("digest-view"));
  }

  async function openPreview(fileId, spanId) {
    const row = $("file-rows").querySelector(`tr[data-file-id="${CSS.escape(fileId)}"]`);
    if (!row) return flash("That file is no longer in this context.", true);
    // The raw text is the user's own file, not a debug view: without the parsed-context
    // pane it opens in the page's source dialog.
    if (!state.uiDebug) {
      const path = `/sessions/${sid}/context/files/${fileId}/?fragment`;
      return Groundwork.openSource(row.dataset.filename, path, "That file is no longer in this context.");
    }
    Object.assign(state, { selectedFileId: fileId, version: "", span: spanId || "" });
    selectTab("preview");
  }

  // --- rendering ---------------------------------------------------------------

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
    loadView();
  }

  // A digest's SourceRef opens the version the digest was built from in the Raw preview, never
  // whatever file now has that name; Show JSON / Show cards.
  $("digest-view").addEventListener("click", (event) => {
    const chip = event.target.closest("a.source-link");
    if (chip) {
      event.preventDefault();
      Object.assign(state, { version: chip.dataset.version, span: chip.dataset.span });
      selectTab("preview");
    } else if (event.target.closest(".json-toggle")) {
      state.showJson = !state.showJson;
      loadView();
    }
  });

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
