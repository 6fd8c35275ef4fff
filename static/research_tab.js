// The Research tab, rendered by the server (research/_research_tab.html) with the page and live. Here: another
// run shown without leaving the page, the clock, an [n] marking its reference, a phone turning to the report.
import { $, liveSocket, load, sessionId, swapFragments } from "./groundwork.js";

const pagePath = `/sessions/${sessionId}/`;
const ACTIVE = new Set(["queued", "binding", "running", "reporting"]);
let socket = null;

function show(html) {
  const before = $("run-state").dataset.status;
  const lines = $("thought-stream").children.length;
  swapFragments(html);
  // New options come in beside the old ones: the one marked selected is the run shown.
  const chosen = $("run-select").querySelector("option[selected]");
  if (chosen) chosen.selected = true;
  if ($("thought-stream").children.length !== lines) $("thought-stream").scrollTop = $("thought-stream").scrollHeight;
  // Below 1200 px one view shows at a time: a run that finishes while its tree is shown opens its report.
  const finished = ACTIVE.has(before) && $("run-state").dataset.status === "completed";
  if (finished && $("research-tab").dataset.view === "tree" && getComputedStyle($("research-views")).display !== "none") $("view-report").click();
  tick();
}
function connect() {
  socket?.close();
  socket = liveSocket(() => `/ws${pagePath}runs/pane/?run=${encodeURIComponent($("run-select").value)}`, {
    onMessage: (message) => message.type === "fragments" && show(message.html),
    onState: (state) => { $("run-select").dataset.live = state; },
  });
}

// Another run: its fragments, then its socket (whose first message is never older than the fetch's).
async function showRun(runId) {
  socket.close();
  try {
    if (!(await load(`${pagePath}?${new URLSearchParams({ run: runId, fragment: "" })}`, "run", show))) return;
    history.replaceState(null, "", `${pagePath}?run=${encodeURIComponent(runId)}${location.hash}`);
  } catch (error) {
    Object.assign($("run-error"), { hidden: false, textContent: error.message });
  }
  connect();
}

// "Run", "Show it", "the earlier report": GET forms of ?run=, shown here without leaving the page.
document.addEventListener("submit", (event) => {
  if (!event.target.matches("form[data-show-run]")) return;
  event.preventDefault();
  const runId = new FormData(event.target).get("run");
  if (runId) showRun(runId);
});

// A run started (or an update of a report) from this page is the one it shows next.
document.addEventListener("groundwork:posted", (event) => {
  const { form, answer } = event.detail;
  if (!form.matches("#run-form, .update-form")) return;
  if (answer.run_id) showRun(answer.run_id);
  else if (answer.message) {
    const alert = form.querySelector("[role=alert]");
    if (alert) Object.assign(alert, { hidden: false, textContent: `Nothing to update: ${answer.message}.` });
  }
});

// An [n] marks its reference (one of stored text also opens in the source dialog: groundwork.js).
$("report-view").addEventListener("click", (event) => {
  const mark = event.target.closest("a.citation");
  if (!mark) return;
  for (const item of $("report-view").querySelectorAll(".references li.targeted")) item.classList.remove("targeted");
  $(mark.getAttribute("href").slice(1))?.classList.add("targeted");
});

// The elapsed time of a run under way counts on between fragments.
function tick() {
  for (const clock of document.querySelectorAll("#run-progress [data-since]")) {
    const whole = Math.max(0, Math.round((Date.now() - Date.parse(clock.dataset.since)) / 1000));
    clock.textContent = `${Math.floor(whole / 60)}:${String(whole % 60).padStart(2, "0")} elapsed`;
  }
}
setInterval(tick, 1000);
connect();
