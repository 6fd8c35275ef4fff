// The Context tab. The server renders the file list, its chips, the banner and the parse controls
// (templates/context/_files.html), with the page and live: /ws/sessions/{sid}/context/pane/ sends
// their fragments, rendered from every manifest; and the parsed-context pane (_digest_view.html,
// GET /sessions/{sid}/context/view/?tab=&file=&version=&span=&json=). Here: uploads with their
// progress, Replace, the forms' If-Match (one writer per tab), and which view the pane shows.
import {
  $, ApiError, formJson, liveSocket, load, mutationHeaders, openSource, requestJson, scrollToHighlight,
  sessionId as sid, swapFragments,
} from "./groundwork.js";

const debugOn = () => $("ui-debug-toggle").checked;
// The newest manifest this tab knows, as far as it needs one: its order, revision and auto-parse.
let manifest = JSON.parse($("context-stamp").textContent);
let paneSeq = -1;  // the manifest the file list shows
// What the parsed-context pane shows (context_app.digest_view.Choice): the server renders it.
const view = new URLSearchParams({ tab: "aggregate", file: "", version: "", span: "", json: "" });

// One writer per tab: mutations run one after another, each with the newest revision as If-Match
// (412 when it moved on), so a tab never trips over its own earlier upload.
let writes = Promise.resolve();
function serialised(task) {
  const run = writes.then(task, task);
  writes = run.catch(() => {});
  return run;
}
const ifMatch = () => ({ "If-Match": `"${manifest.revision}"` });

// XHR, not fetch: only XHR reports upload progress.
const upload = (method, path, field, files, onProgress) => serialised(() => new Promise((resolve, reject) => {
  const xhr = new XMLHttpRequest();
  xhr.open(method, `/api/sessions/${sid}/context${path}`);
  xhr.responseType = "json";  // null when the answer is not JSON
  Object.entries(mutationHeaders({ ...ifMatch(), Accept: "application/json" })).forEach(([name, value]) => xhr.setRequestHeader(name, value));
  xhr.upload.onprogress = (event) => event.lengthComputable && onProgress(event.loaded / event.total);
  xhr.onload = () => {
    if (xhr.status >= 200 && xhr.status < 300) resolve(xhr.response);
    else reject(new ApiError(xhr.status, xhr.response));
  };
  xhr.onerror = () => reject(new ApiError(0, { error: "network error: the upload did not reach the server" }));
  const form = new FormData();
  for (const file of files) form.append(field, file, file.name);
  xhr.send(form);
}));

// Every manifest (a mutation's answer, a push, a GET) is numbered in the order the server read it
// (manifest_seq): one read earlier but arriving later is older news, and showing it would move a
// chip backwards (Ready → Parsing → Ready).
function showManifest(newer) {
  if (!newer || newer.manifest_seq === undefined || newer.manifest_seq <= manifest.manifest_seq) return false;
  manifest = newer;
  return true;
}

// The file list's fragments, from the socket or a GET: shown unless the list shows a later manifest.
function showPane(message) {
  if (message.manifest.manifest_seq > paneSeq) {
    paneSeq = message.manifest.manifest_seq;
    swapFragments(message.html);
    markSelected();
  }
  if (showManifest(message.manifest)) refreshView();
}

let viewTimer;  // a parse sends a burst of manifests: the pane is read once after it
function refreshView() {
  clearTimeout(viewTimer);
  viewTimer = setTimeout(loadView, 200);
}

// What the tab's own mutation changed, rendered (a tab deaf to the socket sees it too).
const refreshPane = () => requestJson("GET", `/sessions/${sid}/context/pane/`).then(showPane, (error) => flash(error.message, true));

async function mutate(action) {
  try {
    showManifest(await action());
    refreshPane();
  } catch (error) {
    if (error.status !== 412) return flash(error.message, true);
    flash("This context changed in another tab — refreshed");
    await refreshPane();
  }
}

// The pane as the server renders it for the reader's choice (a later choice wins).
async function loadView() {
  markSelected();
  if (!debugOn()) return;
  try {
    if (!(await load(`/sessions/${sid}/context/view/?${view}`, "digest-view"))) return;
  } catch (error) {
    if (error.status) flash(`The parsed context could not be read (${error.status}).`, true);
    return;
  }
  const shownFile = $("digest-view").querySelector("[data-file-id]");  // the row of a cited span's current text
  if (shownFile) view.set("file", shownFile.dataset.fileId);
  markSelected();
  if (view.get("tab") === "preview") scrollToHighlight($("digest-view"));
}

// The row of the file whose digest or text the parsed-context pane shows.
function markSelected() {
  for (const row of $("file-rows").rows) row.classList.toggle("selected", row.dataset.fileId === view.get("file"));
}

// A view's tab (tablist.js selects it and gives the tabs their keyboard); a digest's SourceRef opens the
// version the digest was built from in the Raw preview, never whatever file now has that name.
for (const tab of document.querySelectorAll(".digest-pane [role=tab]")) {
  tab.addEventListener("click", () => { view.set("tab", tab.dataset.tab); loadView(); });
}
$("digest-view").addEventListener("click", (event) => {
  const chip = event.target.closest("a.source-link");
  if (chip) {
    event.preventDefault();
    view.set("version", chip.dataset.version);
    view.set("span", chip.dataset.span);
    $("dtab-preview").click();
  } else if (event.target.closest(".json-toggle")) {
    view.set("json", view.get("json") ? "" : "1");
    loadView();
  }
});

let flashTimer;
function flash(message, isError) {
  $("flash").textContent = message;
  $("flash").classList.toggle("error", Boolean(isError));
  $("flash").hidden = false;
  clearTimeout(flashTimer);
  flashTimer = setTimeout(() => { $("flash").hidden = true; }, 8000);
}

// --- uploads -------------------------------------------------------------------

// A row of #upload-progress, from the page's template: the file's name, and its progress bar. An
// upload that failed keeps its row, saying why, until it is dismissed.
function uploadRow(label, name) {
  const row = $("upload-row-template").content.firstElementChild.cloneNode(true);
  row.querySelector(".name").textContent = label;
  row.querySelector("progress").setAttribute("aria-label", label === name ? `Uploading ${name}` : label);
  row.failed = (message) => {
    const failed = $("upload-failed-template").content.cloneNode(true);
    failed.querySelector(".dismiss").setAttribute("aria-label", `Dismiss ${name}`);
    failed.querySelector(".dismiss").addEventListener("click", () => row.remove());
    failed.querySelector(".failed").textContent = `${name}: ${message}`;
    row.querySelector("progress").replaceWith(failed);
  };
  return $("upload-progress").appendChild(row);
}

// One request for the whole selection (one revision, one diff in the banner); multipart sends the
// files in order, so sent bytes tell each file's progress.
async function uploadFiles(fileList) {
  const files = [...fileList];  // before the input is cleared
  let offset = 0;
  const bars = files.map((file) => {
    const row = uploadRow(file.name, file.name);
    const entry = { row, bar: row.querySelector("progress"), start: offset, size: Math.max(file.size, 1) };
    offset += file.size;
    return entry;
  });
  const onProgress = (share) => bars.forEach((b) => { b.bar.value = Math.min(1, Math.max(0, (share * offset - b.start) / b.size)); });
  try {
    showManifest(await upload("POST", "/files", "files", files, onProgress));
    bars.forEach((b) => { b.bar.value = 1; });
    refreshPane();
    if (manifest.auto_parse) flash("Uploaded; parsing starts automatically.");
    setTimeout(() => bars.forEach((b) => b.row.remove()), 1200);
  } catch (error) {
    if (error.status === 412) {
      await refreshPane();
      flash("This context changed in another tab — refreshed");
    }
    bars.forEach((b) => b.row.failed(error.status === 412 ? "not uploaded: upload again" : error.message));
  }
}

let replaceTarget = null;
$("replace-input").addEventListener("change", async (event) => {
  const file = event.target.files[0];
  event.target.value = "";
  if (!file || !replaceTarget) return;
  const row = uploadRow(`Replacing with ${file.name}`, file.name);
  await mutate(() => upload("PUT", `/files/${replaceTarget}`, "file", [file], (share) => { row.querySelector("progress").value = share; }));
  row.remove();
});

// A row's buttons; its Retry and Delete are forms (below). Its Preview is a link to the file's text
// (without script; and the raw text is the user's own file: without the parsed-context pane it opens
// in the page's source dialog).
$("file-rows").addEventListener("click", (event) => {
  const action = event.target.closest("[data-action]");
  if (!action) return;
  const { action: what } = action.dataset;
  const row = action.closest("tr");
  if (what === "replace") {
    replaceTarget = row.dataset.fileId;
    return $("replace-input").click();
  }
  if (what === "preview") event.preventDefault();
  if (what === "preview" && !debugOn()) {
    return openSource(row.dataset.filename, `${action.getAttribute("href")}?fragment`, "That file is no longer in this context.");
  }
  view.set("file", row.dataset.fileId);
  if (what === "preview") ["version", "span"].forEach((name) => view.set(name, ""));
  if (debugOn()) return $(what === "preview" ? "dtab-preview" : "dtab-file").click();
  markSelected();
  flash("Turn on “Show parsed context” to see digests.");
});

// The file list's forms ("METHOD /context/…" in data-context-api) go through the tab's one writer,
// with the newest revision as If-Match; without script they post to the page (context_app.pages).
document.addEventListener("submit", (event) => {
  const form = event.target;
  if (!form.matches("form[data-context-api]")) return;
  event.preventDefault();
  if (form.dataset.confirm && !window.confirm(form.dataset.confirm)) return;
  const [method, path] = form.dataset.contextApi.split(" ");
  const { revision, ...body } = formJson(form);
  const options = () => ({ body: Object.keys(body).length ? body : undefined, headers: ifMatch() });
  mutate(() => serialised(() => requestJson(method, `/api/sessions/${sid}${path}`, options())));
});

$("file-input").addEventListener("change", (event) => {
  if (event.target.files.length) uploadFiles(event.target.files);
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
// The parsed-context pane shows while the toggle is on (groundwork.css); the preference is the user's.
$("ui-debug-toggle").addEventListener("change", async (event) => {
  try {
    event.target.checked = (await requestJson("PATCH", "/api/me/preferences", { body: { ui_debug: event.target.checked } })).ui_debug;
  } catch (error) {
    event.target.checked = !event.target.checked;
    flash(error.message, true);
  }
  refreshView();
});

liveSocket(`/ws/sessions/${sid}/context/pane/`, {
  onState: (live) => { document.body.dataset.live = live; },
  onMessage: showPane,
});
