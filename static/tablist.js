// WAI-ARIA tabs for every [role=tablist]: the selected tab is the one Tab stop; arrows, Home and End move and
// select. Tabs with a panel each switch it here (tabs sharing one, the digest views, leave it to the page's
// script); data-switch="page" (Research below 1200 px) names the view on the parent (data-view) for CSS.
const tabsOf = (list) => [...list.querySelectorAll('[role="tab"]')];

function select(list, tab) {
  const tabs = tabsOf(list);
  const ownPanels = list.dataset.switch !== "page" && new Set(tabs.map((t) => t.getAttribute("aria-controls"))).size === tabs.length;
  for (const other of tabs) {
    other.setAttribute("aria-selected", String(other === tab));
    other.tabIndex = other === tab ? 0 : -1;
    const panel = ownPanels && document.getElementById(other.getAttribute("aria-controls"));
    if (panel) panel.hidden = other !== tab;
  }
  if (list.dataset.switch === "page") list.parentElement.dataset.view = tab.dataset.view;
}
function enhance(list) {
  select(list, tabsOf(list).find((t) => t.getAttribute("aria-selected") === "true") || tabsOf(list)[0]);
  list.addEventListener("click", (event) => {
    const tab = event.target.closest('[role="tab"]');
    if (tab && list.contains(tab)) select(list, tab);
  });
  list.addEventListener("keydown", (event) => {
    const tabs = tabsOf(list);
    const at = tabs.indexOf(document.activeElement);
    const next = { ArrowRight: at + 1, ArrowLeft: at - 1, Home: 0, End: tabs.length - 1 }[event.key];
    if (at < 0 || next === undefined) return;
    event.preventDefault();
    const tab = tabs[(next + tabs.length) % tabs.length];
    tab.focus();
    tab.click();
  });
}

const lists = [...document.querySelectorAll('[role="tablist"]')];
lists.forEach(enhance);
function openFromHash() {
  const panelId = decodeURIComponent(location.hash.slice(1));
  for (const list of panelId ? lists : []) tabsOf(list).find((t) => t.getAttribute("aria-controls") === panelId)?.click();
}
openFromHash();
window.addEventListener("hashchange", openFromHash);
