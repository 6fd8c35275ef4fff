// The Context tab: its file list (context/_files.html) comes rendered with the page and live, its parsed-context
// pane from GET /sessions/{sid}/context/view/. Here: uploads with progress, If-Match, the pane's choice.
import {
  $, formJson, liveSocket, load, openSource, requestJson, scrollToHighlight, sessionId as sid, swapFragments,
} from "./groundwork.js";

const debugOn = () => $("ui-debug-toggle").checked;
let manifest = JSON.parse($("context-stamp").textContent);
let paneSeq = -1;  // the manifest the file list shows; `manifest` is the newest this tab knows
const view = new URLSearchParams({ tab: "aggregate", file: "", version: "", span: "", json: "" });  // digest_view.Choice

// One writer per tab: mutations run in turn, each with the newest revision as If-Match (412 if it moved on).
let writes = Promise.resolve();  // never rejects: a failed write does not stop the next
const serialised = (task) => { const run = writes.then(task); writes = run.catch(() => {}); return run; };
const ifMatch = () => ({ "If-Match": `"${manifest.revision}"` });
// A manifest read earlier (manifest_seq) but arriving later is older news: it would move a chip backwards.
function showManifest(newer) {
  if (!(newer?.manifest_seq > manifest.manifest_seq)) return false;
  manifest = newer;
  return true;
}
function showPane(message) {
  if (message.manifest.manifest_seq > paneSeq) {
    paneSeq = message.manifest.manifest_seq;
    swapFragments(message.html);
    markSelected();
  }
  if (showManifest(message.manifest)) refreshView();
}

// What the tab's own mutation changed (a tab deaf to the socket sees it too).
const refreshPane = () => requestJson("GET", `/sessions/${sid}/context/pane/`).then(showPane, (error) => flash(error.message, true));
const refreshedAfter412 = () => refreshPane().then(() => flash("This context changed in another tab — refreshed"));
async function mutate(action) {
  try {
    showManifest(await action());
    refreshPane();
  } catch (error) {
    await (error.status === 412 ? refreshedAfter412() : flash(error.message, true));
  }
}
let viewTimer;  // a parse sends a burst of manifests: the pane is read once after it
const refreshView = () => { clearTimeout(viewTimer); viewTimer = setTimeout(loadView, 200); };
const markSelected = () => [...$("file-rows").rows].forEach((row) => row.classList.toggle("selected", row.dataset.fileId === view.get("file")));
async function loadView() {
  markSelected();
  if (!debugOn()) return;
  try {
    if (!(await load(`/sessions/${sid}/context/view/?${view}`, "digest-view"))) return;
  } catch (error) {
    return error.status && flash(error.status === 401 ? error.message : `The parsed context could not be read (${error.status}).`, true);
  }
  const shownFile = $("digest-view").querySelector("[data-file-id]");  // the row of a cited span's current text
  if (shownFile) view.set("file", shownFile.dataset.fileId);
  markSelected();
  if (view.get("tab") === "preview") scrollToHighlight($("digest-view"));
}
// A digest's SourceRef opens the version the digest was built from in the Raw preview (tablist.js selects tabs).
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
  Object.assign($("flash"), { textContent: message, hidden: false });
  $("flash").classList.toggle("error", Boolean(isError));
  clearTimeout(flashTimer);
  flashTimer = setTimeout(() => { $("flash").hidden = true; }, 8000);
}
// One request for the selection (one revision, one diff), or a Replace's PUT: multipart sends the files in
// order, so the bytes sent tell each file's progress. A failed upload's row says why until dismissed.
async function uploadFiles(fileList, method = "POST", path = "/files", field = "files") {
  const body = new FormData();
  let offset = 0;
  const bars = [...fileList].map((file) => {
    body.append(field, file, file.name);
    const row = $("upload-progress").appendChild($("upload-row-template").content.firstElementChild.cloneNode(true));
    const label = method === "PUT" ? `Replacing with ${file.name}` : `Uploading ${file.name}`;
    row.querySelector(".name").textContent = method === "PUT" ? label : file.name;
    row.querySelector("progress").setAttribute("aria-label", label);
    offset += file.size;
    return { row, bar: row.querySelector("progress"), name: file.name, start: offset - file.size, size: Math.max(file.size, 1) };
  });
  const onProgress = (share) => bars.forEach((b) => { b.bar.value = Math.min(1, Math.max(0, (share * offset - b.start) / b.size)); });
  const send = () => requestJson(method, `/api/sessions/${sid}/context${path}`, { body, headers: ifMatch(), onProgress });
  try {
    showManifest(await serialised(send));
    bars.forEach((b) => { b.bar.value = 1; });
    refreshPane();
    if (manifest.auto_parse) flash("Uploaded; parsing starts automatically.");
    setTimeout(() => bars.forEach((b) => b.row.remove()), 1200);
  } catch (error) {
    if (error.status === 412) await refreshedAfter412();
    for (const { bar, name } of bars) {
      const failed = $("upload-failed-template").content.cloneNode(true);
      failed.querySelector(".dismiss").setAttribute("aria-label", `Dismiss ${name}`);
      failed.querySelector(".failed").textContent = `${name}: ${error.status === 412 ? "not uploaded: upload again" : error.message}`;
      bar.replaceWith(failed);
    }
  }
}
$("upload-progress").addEventListener("click", (event) => event.target.closest(".dismiss")?.closest("li").remove());
$("file-input").addEventListener("change", (event) => {
  if (event.target.files.length) uploadFiles(event.target.files);
  event.target.value = "";
});
let replaceTarget = null;
$("replace-input").addEventListener("change", (event) => {
  if (event.target.files[0] && replaceTarget) uploadFiles(event.target.files, "PUT", `/files/${replaceTarget}`, "file");
  event.target.value = "";
});
const zone = $("dropzone");
zone.addEventListener("dragover", (event) => { event.preventDefault(); zone.classList.add("dragover"); });
zone.addEventListener("dragleave", () => zone.classList.remove("dragover"));
zone.addEventListener("drop", (event) => {
  event.preventDefault();
  zone.classList.remove("dragover");
  if (event.dataTransfer?.files.length) uploadFiles(event.dataTransfer.files);
});
zone.addEventListener("keydown", (event) => {
  if (event.key === "Enter" || event.key === " ") { event.preventDefault(); $("file-input").click(); }
});

// A row's buttons (Retry and Delete are forms); Preview, a link, opens the source dialog while the pane is off.
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

// The file list's forms ("METHOD /context/…") go through the one writer (without script: context_app.pages).
document.addEventListener("submit", (event) => {
  const form = event.target;
  if (!form.matches("form[data-context-api]")) return;
  event.preventDefault();
  if (form.dataset.confirm && !window.confirm(form.dataset.confirm)) return;
  const [method, path] = form.dataset.contextApi.split(" ");
  const { revision, ...fields } = formJson(form);
  const body = Object.keys(fields).length ? fields : undefined;
  mutate(() => serialised(() => requestJson(method, `/api/sessions/${sid}${path}`, { body, headers: ifMatch() })));
});

// The parsed-context pane shows while the toggle is on (groundwork.css), a preference of the user's.
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
