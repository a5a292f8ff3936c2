// @ts-check
// Liza Board activity feed: new events appear at the top, live, over the board's websocket.
// The server checks membership when the socket opens (boards.board.live.consumers), as for a board.
// Messages carry a per-project sequence number; after a gap or a reconnect the feed asks the
// server for the rows after the newest one it shows, with the same filters.
(function () {
  "use strict";
  const view = document.getElementById("activity-view");
  const list = document.getElementById("activity");
  if (!view || !list || !view.dataset.livePage) return;
  const status = document.getElementById("live-status");
  let lastSeq = parseInt(view.dataset.seq || "0", 10);
  let catchingUp = false;
  // A catch-up asked for while one is on its way runs after it, from the newest row shown when
  // it was asked for: the one on its way may have been answered before those events committed.
  let pendingAfter = null;

  function setStatus(text, ok) {
    status.textContent = text;
    status.classList.toggle("ok", !!ok);
  }

  function newestId() {
    const first = /** @type {HTMLElement | null} */ (list.querySelector("li[data-id]"));
    return first ? parseInt(first.dataset.id, 10) : 0;
  }

  function matches(event) {
    if (view.dataset.agent && event.actor !== view.dataset.agent) return false;
    if (view.dataset.task && event.task !== view.dataset.task) return false;
    if (view.dataset.action && event.action !== view.dataset.action) return false;
    return true;
  }

  function prepend(html, id) {
    if (list.querySelector(`li[data-id="${id}"]`)) return; // rendered with the page already
    const t = document.createElement("template");
    t.innerHTML = html.trim();
    const row = t.content.firstElementChild;
    row.classList.add("fresh");
    const empty = list.querySelector(".empty");
    if (empty) empty.remove();
    // By id, not simply on top: rows fetched after a gap can arrive after newer live ones.
    const newId = parseInt(id, 10);
    const before = Array.from(/** @type {NodeListOf<HTMLElement>} */ (list.querySelectorAll("li[data-id]"))).find((li) => parseInt(li.dataset.id, 10) < newId);
    list.insertBefore(row, before || null);
    view.dataset.received = String(parseInt(view.dataset.received || "0", 10) + 1);
  }

  async function catchUp(after = newestId()) {
    if (catchingUp) {
      pendingAfter = pendingAfter === null ? after : Math.min(pendingAfter, after);
      return;
    }
    catchingUp = true;
    const params = new URLSearchParams();
    for (const name of ["agent", "task", "action"]) if (view.dataset[name]) params.set(name, view.dataset[name]);
    params.set("after", String(after));
    try {
      const response = await fetch(`${view.dataset.rowsUrl}?${params}`, { credentials: "same-origin" });
      if (!response.ok) throw new Error(`HTTP ${response.status}`);
      const data = await response.json();
      if (data.truncated) {
        window.location.reload(); // missed more than a page: start afresh
        return;
      }
      const t = document.createElement("template");
      t.innerHTML = data.html.trim();
      // Newest first from the server: prepend the oldest first.
      for (const row of /** @type {HTMLElement[]} */ (Array.from(t.content.children)).reverse()) prepend(row.outerHTML, row.dataset.id);
      lastSeq = Math.max(lastSeq, data.seq);
    } catch {
      setStatus("catching up failed, retrying…", false);
      setTimeout(() => catchUp(after), 2000);
    } finally {
      catchingUp = false;
      if (pendingAfter !== null) {
        const next = pendingAfter;
        pendingAfter = null;
        catchUp(next);
      }
    }
  }

  function apply(message) {
    if (message.type === "hello") {
      if (message.seq !== lastSeq) catchUp();
      return;
    }
    if (message.type !== "changes" || message.seq <= lastSeq) return;
    const gap = message.seq !== lastSeq + 1;
    lastSeq = message.seq;
    if (gap) {
      catchUp();
      return;
    }
    for (const change of message.changes) {
      if (change.type !== "events.recorded") continue;
      if (change.omitted) {
        catchUp();
        return;
      }
      // Newest first in the message: prepend the oldest first.
      for (const event of change.events.slice().reverse()) if (matches(event)) prepend(event.html, event.id);
    }
  }

  liveSocket(view, setStatus, apply);
})();
