// @ts-check
// Issue 24: a running run's output, live in the task drawer. board.js hands every "run.output"
// change of the board's websocket (members of the project only) to this as a DOM event; the
// drawer's run (templates/boards/_runs.html) shows the server's tail of its output, its state,
// reason and duration.
(function () {
  "use strict";
  document.addEventListener("liza:run-output", (e) => {
    const change = /** @type {CustomEvent} */ (e).detail;
    if (!change || !change.run) return;
    const id = String(change.run.id);
    for (const pre of document.querySelectorAll(`pre[data-run-output="${CSS.escape(id)}"]`)) {
      const atBottom = pre.scrollHeight - pre.scrollTop - pre.clientHeight < 20;
      pre.textContent = change.output; // text, never markup: the agent's output is untrusted
      if (atBottom) pre.scrollTop = pre.scrollHeight;
      const item = pre.closest("li.run");
      if (!item) continue;
      const state = item.querySelector(".run-state");
      if (state) state.textContent = change.run.state;
      const duration = item.querySelector(".run-duration");
      if (duration) duration.textContent = change.run.duration;
    }
  });
})();
