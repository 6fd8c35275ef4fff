// The Research tab's views below 1200 px: one pane at a time (Runs & tree, Report,
// Chat, Thought stream), chosen by the #research-views tabs, so the report and the
// chat are each one tap away instead of under a long tree. Wide screens show every
// pane and no tabs (groundwork.css); tablist.js gives the tabs their keyboard.
(function () {
  "use strict";

  const list = document.getElementById("research-views");
  const layout = document.getElementById("research-tab");
  if (!list || !layout) return;
  list.addEventListener("click", (event) => {
    const tab = event.target.closest('[role="tab"]');
    if (tab && list.contains(tab)) layout.dataset.view = tab.dataset.view;
  });
})();
