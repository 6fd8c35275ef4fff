// WAI-ARIA tabs for every [role=tablist] on the page: the selected tab is the one
// Tab stop (roving tabindex), arrow keys / Home / End move between tabs and select
// them. A tab list whose tabs each control their own panel switches the panels
// here; one whose tabs share a panel (the digest views) leaves that to its page
// script, which listens to the tabs' click events as usual. One that says
// data-switch="page" (the Research views below 1200 px: all shown when wide) names
// the view on its parent (data-view), whose CSS shows that view's pane.
const tabsOf = (list) => Array.from(list.querySelectorAll('[role="tab"]'));

function select(list, tab) {
  const tabs = tabsOf(list);
  const ownPanels = list.dataset.switch !== "page"
    && new Set(tabs.map((t) => t.getAttribute("aria-controls"))).size === tabs.length;
  for (const other of tabs) {
    const selected = other === tab;
    other.setAttribute("aria-selected", String(selected));
    other.tabIndex = selected ? 0 : -1;
    if (ownPanels) {
      const panel = document.getElementById(other.getAttribute("aria-controls"));
      if (panel) panel.hidden = !selected;
    }
  }
  if (list.dataset.switch === "page") list.parentElement.dataset.view = tab.dataset.view;
}

function enhance(list) {
  const current = tabsOf(list).find((t) => t.getAttribute("aria-selected") === "true") || tabsOf(list)[0];
  if (current) select(list, current);
  list.addEventListener("click", (event) => {
    const tab = event.target.closest('[role="tab"]');
    if (tab && list.contains(tab)) select(list, tab);
  });
  list.addEventListener("keydown", (event) => {
    const tabs = tabsOf(list);
    const at = tabs.indexOf(document.activeElement);
    if (at < 0) return;
    const next = { ArrowRight: at + 1, ArrowLeft: at - 1, Home: 0, End: tabs.length - 1 }[event.key];
    if (next === undefined) return;
    event.preventDefault();
    const tab = tabs[(next + tabs.length) % tabs.length];
    tab.focus();
    tab.click();
  });
}

function openFromHash(lists) {
  const panelId = decodeURIComponent(location.hash.slice(1));
  if (!panelId) return;
  for (const list of lists) {
    const tab = tabsOf(list).find((t) => t.getAttribute("aria-controls") === panelId);
    if (tab) tab.click();
  }
}

const lists = Array.from(document.querySelectorAll('[role="tablist"]'));
lists.forEach(enhance);
openFromHash(lists);
window.addEventListener("hashchange", () => openFromHash(lists));
