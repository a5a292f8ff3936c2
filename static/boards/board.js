// @ts-check
// Liza Board: keeps a server-rendered board live over its websocket.
// Messages carry a per-project sequence number; a gap or a reconnect triggers a resync from
// the server (the board never trusts a DOM that may have missed an event). Its pure rules (the
// live filter, a card's place, times) are board_rules.js's, loaded first.
(function () {
  "use strict";
  // Oversight forms (board drawer, inbox): "+ another task" adds an empty new-task row.
  document.addEventListener("click", (e) => {
    const add = /** @type {HTMLElement} */ (e.target).closest("[data-add-row]");
    if (!add) return;
    const rows = add.closest("fieldset").querySelectorAll(".new-task");
    const row = /** @type {HTMLElement} */ (rows[rows.length - 1].cloneNode(true));
    const inputs = /** @type {NodeListOf<HTMLInputElement>} */ (row.querySelectorAll("input:not([type=hidden]):not([name=new_priority])"));
    for (const input of inputs) input.value = "";
    add.before(row);
  });

  // A page rendered in answer to a POST (a refusal, a key shown once) names its own address:
  // put it in the address bar, so that a reload reads the page instead of posting again.
  const canonical = /** @type {HTMLElement} */ (document.querySelector("[data-canonical-url]"));
  if (canonical) history.replaceState(null, "", canonical.dataset.canonicalUrl);

  const board = document.getElementById("board");
  if (!board) return;
  const { matches, placement, human, duration, announcement, stepFocus, narrowedIn } = BoardRules;
  const params = new URLSearchParams(window.location.search);
  const status = document.getElementById("live-status");
  let lastSeq = parseInt(board.dataset.seq || "0", 10);
  let resyncTimer = null;

  function setStatus(text, ok) {
    status.textContent = text;
    status.classList.toggle("ok", !!ok);
  }

  // The filters the server applied to this page (validated and cleaned by it), re-applied to
  // live cards: the page never re-reads its own query string.
  /** @type {AppliedFilters} */
  const filters = JSON.parse(board.dataset.filters || "{}");

  /** @returns {HTMLElement} */
  function column(statusName) {
    return board.querySelector(`.column[data-status="${statusName}"]`);
  }

  function bumpCount(col, delta) {
    if (!col) return;
    const el = col.querySelector(".count");
    const n = Math.max(0, parseInt(el.dataset.count, 10) + delta);
    el.dataset.count = String(n);
    el.textContent = String(n);
  }

  // "N tasks": the columns' own counts (the server's, kept live by bumpCount), so the total
  // can never disagree with them; with swimlanes, the server's total of the last resync.
  function updateTotal() {
    const cols = document.getElementById("columns");
    const total = document.getElementById("board-total");
    if (!cols || !total) return;
    let n = parseInt(cols.dataset.total || "0", 10);
    if (!cols.dataset.lanes) {
      n = 0;
      for (const el of /** @type {NodeListOf<HTMLElement>} */ (cols.querySelectorAll(".column > h2 .count"))) n += parseInt(el.dataset.count || "0", 10);
    }
    total.dataset.total = String(n);
    total.textContent = `${n} task${n === 1 ? "" : "s"}`;
  }

  function fragment(html) {
    const t = document.createElement("template");
    t.innerHTML = html.trim();
    return t.content.firstElementChild;
  }

  // The "N more" line of a capped column: its count minus the cards it shows.
  function updateMore(col) {
    const shown = col.querySelectorAll(".cards > .card").length;
    const hidden = parseInt(col.querySelector(".count").dataset.count, 10) - shown;
    let more = col.querySelector(".more");
    if (hidden > 0 && col.dataset.expanded === "1") {
      if (!more) {
        more = document.createElement("p");
        more.className = "more";
        col.appendChild(more);
      }
      more.dataset.hidden = String(hidden);
      more.textContent = `${hidden} more — narrow the filters to see them`;
    } else if (more) more.remove();
  }

  // In the server's order (priority, created, id: the card's data-order sorts the same way)
  // and within the column's cap: a card that would land past the cap is only counted, one that
  // lands inside it pushes the last card out (issue #13).
  function placeCard(col, card) {
    const cards = col.querySelector(".cards");
    const shown = /** @type {HTMLElement[]} */ (Array.from(cards.children));
    const place = placement(shown.map((c) => c.dataset.order || ""), card.dataset.order || "", parseInt(col.dataset.cap || "0", 10));
    if (!place) return;
    cards.insertBefore(card, shown[place.at] || null);
    if (place.dropLast) cards.lastElementChild.remove();
    narrowCard(card);
  }

  // -- announcements for screen readers: short sentences, gathered for a moment ---------------
  const announcer = document.getElementById("board-announcer");
  let pending = [];
  let announceTimer = null;
  function announce(sentence) {
    if (!announcer) return;
    pending.push(sentence);
    clearTimeout(announceTimer);
    announceTimer = setTimeout(() => {
      announcer.textContent = announcement(pending);
      pending = [];
    }, 800);
  }

  function applyTask(change) {
    const task = change.task;
    const existing = /** @type {HTMLElement} */ (board.querySelector(`.card[data-key="${CSS.escape(task.key)}"]`));
    const oldCol = existing ? existing.closest(".column") : null;
    if (existing && existing.dataset.status !== task.status) announce(`${task.key} moved to ${task.status}.`);
    else if (!existing && matches(task, filters)) announce(`${task.key} is now ${task.status}.`);
    if (document.getElementById("columns").dataset.lanes) {
      // Swimlanes: which lane and cell a card goes to (and their counts) is the server's
      // grouping, so the board asks it again rather than copying the rule here.
      scheduleResync();
      refreshDrawer(task.key);
      return;
    }
    if (existing) {
      const hadHidden = oldCol.querySelector(".more");
      existing.remove();
      bumpCount(oldCol, -1);
      updateMore(oldCol);
      // Its column showed fewer cards than it holds: the next one is the server's to say.
      if (hadHidden) scheduleResync();
    }
    if (!matches(task, filters)) {
      updateTotal();
      if (!existing && task.status !== "DRAFT") scheduleResync();
      return;
    }
    const col = column(task.status);
    if (!existing && task.status !== "DRAFT") {
      // A card this page never showed (collapsed, beyond a column's limit, or new to the
      // filters): where it came from is unknown, so let the server recount.
      scheduleResync();
    }
    bumpCount(col, +1);
    if (col && col.dataset.expanded === "1") {
      placeCard(col, fragment(change.html));
      updateMore(col);
    }
    updateTotal();
    refreshDrawer(task.key);
  }

  // A live change to the task the drawer is for (shown, or still on its way) shows it again.
  function refreshDrawer(key) {
    if (drawerKey === key) openDrawer(key, { refresh: true });
  }

  function applyAgent(change) {
    const row = fragment(change.html);
    const existing = board.querySelector(`.agent[data-agent="${CSS.escape(change.agent.agent_id)}"]`);
    const list = document.getElementById("agents");
    if (existing) existing.replaceWith(row);
    else {
      const empty = list.querySelector(".empty");
      if (empty) empty.remove();
      list.appendChild(row);
    }
  }

  function applyHeader(change) {
    const header = document.getElementById("board-header");
    if (header) header.replaceWith(fragment(change.html));
    if (change.controls) refreshControls();
  }

  // The oversight controls (members and admins) depend on the sprint, goal and pause state:
  // fetched again from the server when an event says they changed, never patched here.
  async function refreshControls() {
    const controls = document.getElementById("oversight-controls");
    if (!controls) return;
    if (controls.contains(document.activeElement) && document.activeElement.matches("textarea, input")) {
      controls.dataset.stale = "1"; // the person is typing: refresh once they leave the form
      return;
    }
    try {
      const response = await fetch(controls.dataset.url, { credentials: "same-origin" });
      if (!response.ok) return;
      const fresh = fragment(await response.text());
      const current = document.getElementById("oversight-controls");
      if (!current) return;
      if (current.contains(document.activeElement) && document.activeElement.matches("textarea, input")) {
        // They began typing while the fetch was under way: what they typed is not thrown away.
        current.dataset.stale = "1";
        return;
      }
      current.replaceWith(fresh);
    } catch {
      /* the next header change or resync tries again */
    }
  }
  board.addEventListener("focusout", (e) => {
    const controls = document.getElementById("oversight-controls");
    if (controls && controls.dataset.stale && !controls.contains(/** @type {Node} */ (e.relatedTarget))) refreshControls();
  });

  function setPaused(paused) {
    // The server cannot reach its channel layer (Redis): the socket is open but nothing comes.
    if (paused) {
      board.dataset.paused = "1";
      setStatus("live updates paused — the board catches up when they resume", false);
    } else if (board.dataset.paused) {
      delete board.dataset.paused;
      setStatus("live", true);
      resync(); // whatever committed meanwhile
    }
  }

  function apply(message) {
    if (message.type === "hello") {
      setPaused(Boolean(message.paused));
      if (message.seq !== lastSeq) resync();
      return;
    }
    if (message.type === "watcher") {
      applySweep(message);
      return;
    }
    if (message.type === "live") {
      setPaused(Boolean(message.paused));
      return;
    }
    if (message.type !== "changes") return;
    if (message.seq <= lastSeq) return; // already reflected in what the server rendered
    if (message.seq !== lastSeq + 1) {
      resync();
      return;
    }
    lastSeq = message.seq;
    board.dataset.seq = String(lastSeq);
    for (const change of message.changes) {
      if (change.type === "task.changed") applyTask(change);
      else if (change.type === "agent.changed") applyAgent(change);
      else if (change.type === "sprint.changed") applyHeader(change);
      else if (change.type === "run.output") document.dispatchEvent(new CustomEvent("liza:run-output", { detail: change })); // runs.js
    }
    tick();
  }

  function scheduleResync() {
    clearTimeout(resyncTimer);
    resyncTimer = setTimeout(resync, 300);
  }

  // Resyncs can overlap (swimlanes resync on every change) and their answers come back in any
  // order: only the latest request's answer is drawn. An answer older than changes the board
  // applied while it was on its way is not drawn either; another resync follows. (Only then:
  // a restarted server counts again from 1, and its first answer must be taken.)
  let resyncRequest = 0;

  async function resync() {
    clearTimeout(resyncTimer);
    const request = ++resyncRequest;
    const seqAtStart = lastSeq;
    const url = board.dataset.fragmentUrl + window.location.search;
    try {
      const response = await fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } });
      if (!response.ok) throw new Error(`resync: HTTP ${response.status}`);
      const data = await response.json();
      if (request !== resyncRequest) return;
      if (lastSeq !== seqAtStart && data.seq < lastSeq) {
        scheduleResync();
        return;
      }
      document.getElementById("columns").replaceWith(fragment(data.columns));
      document.getElementById("board-header").replaceWith(fragment(data.header));
      document.getElementById("agents").replaceWith(fragment(data.agents));
      lastSeq = data.seq;
      board.dataset.seq = String(lastSeq);
      board.dataset.resyncs = String(parseInt(board.dataset.resyncs || "0", 10) + 1);
      refreshControls();
      for (const card of document.querySelectorAll("#columns .card")) narrowCard(card);
      updateTotal();
      tick();
    } catch {
      if (request !== resyncRequest) return; // a later resync is under way
      setStatus("resync failed, retrying…", false);
      scheduleResync();
    }
  }

  // -- countdowns ------------------------------------------------------------------------------
  function tick() {
    const now = Date.now();
    for (const el of /** @type {NodeListOf<HTMLElement>} */ (board.querySelectorAll("[data-expires]"))) {
      const left = (Date.parse(el.dataset.expires) - now) / 1000;
      if (Number.isNaN(left)) continue;
      el.textContent = left >= 0 ? `${human(left)} left` : `expired ${human(left)} ago`;
      el.classList.toggle("expired", left < 0);
    }
    for (const el of /** @type {NodeListOf<HTMLElement>} */ (board.querySelectorAll("[data-entered]"))) {
      const ago = (now - Date.parse(el.dataset.entered)) / 1000;
      if (!Number.isNaN(ago)) el.textContent = `${human(Math.max(0, ago))}`;
    }
    for (const el of /** @type {NodeListOf<HTMLElement>} */ (board.querySelectorAll("[data-age-since]"))) {
      const ago = (now - Date.parse(el.dataset.ageSince)) / 1000;
      if (!Number.isNaN(ago)) el.textContent = `for ${duration(ago)}`;
    }
    for (const el of /** @type {NodeListOf<HTMLElement>} */ (board.querySelectorAll("[data-since]"))) {
      const ago = (now - Date.parse(el.dataset.since)) / 1000;
      if (!Number.isNaN(ago)) el.textContent = `♥ ${human(ago)} ago`;
    }
    // The watcher's last sweep: its age when the server drew the header, plus the time this
    // page has held it (no trust in the browser's clock), reset by each sweep's message; the
    // warning once it is older than the server's limit (3 watch intervals).
    const watcher = /** @type {HTMLElement & { seenAt?: number }} */ (document.getElementById("watcher-status"));
    const silent = document.getElementById("watcher-silent");
    if (watcher && watcher.dataset.age !== undefined && watcher.dataset.age !== "") {
      if (watcher.seenAt === undefined) watcher.seenAt = now;
      const ago = Math.max(0, Math.round(parseInt(watcher.dataset.age, 10) + (now - watcher.seenAt) / 1000));
      watcher.querySelector(".watcher-age").textContent = `last seen ${ago} s ago`;
      if (silent) silent.hidden = ago <= parseInt(watcher.dataset.silentAfter, 10);
    }
  }

  // A watcher has just swept this project (boards.coordination.outbox.watcher_swept).
  function applySweep(message) {
    const watcher = /** @type {HTMLElement & { seenAt?: number }} */ (document.getElementById("watcher-status"));
    if (!watcher) return;
    watcher.dataset.age = "0";
    watcher.dataset.silentAfter = String(message.silent_after);
    watcher.seenAt = Date.now();
    tick();
  }

  // -- the task drawer -------------------------------------------------------------------------
  /** @type {HTMLElement | null} */
  let returnFocusTo = null; // the card whose drawer is open: focus goes back to it on close
  // The task the drawer is for, and the number of the latest request for it. Answers can come
  // back out of order (a card clicked while a live refresh or the reopen after an action is on
  // its way); only the latest request's answer is shown, and none once the drawer is closed.
  let drawerKey = null;
  let drawerRequest = 0;
  let drawerFocus = false; // opened from the keyboard: the focus moves in once it is shown

  async function openDrawer(key, { focus = false, refresh = false } = {}) {
    const drawer = document.getElementById("drawer");
    drawerKey = key;
    if (!refresh) drawerFocus = focus;
    const request = ++drawerRequest;
    const response = await fetch(board.dataset.drawerUrl + encodeURIComponent(key) + "/", { credentials: "same-origin" });
    if (!response.ok) return;
    const html = await response.text();
    if (request !== drawerRequest) return;
    // Someone may have begun typing while a refresh was on its way: their text stays.
    const shown = drawer.querySelector(`.drawer-body[data-key="${CSS.escape(key)}"]`);
    if (refresh && !drawer.hidden && shown && editing(drawer)) {
      markDrawerStale(drawer, key);
      return;
    }
    drawer.innerHTML = html;
    if (!refresh) dockDrawer(drawer, key);
    drawer.hidden = false;
    showBackdrop(true);
    tick();
    if (drawerFocus) {
      drawerFocus = false;
      drawer.setAttribute("tabindex", "-1");
      drawer.focus();
    }
  }

  // The drawer docks on the side away from the card it is for (issue 25: it never covers the
  // card needed next): opened from the right half of the board — BLOCKED and the approvals,
  // where the next card to decide waits — it opens on the left, so that column stays in view
  // and its next card can be clicked without closing anything. A live refresh keeps the side.
  function dockDrawer(drawer, key) {
    const card = board.querySelector(`#columns .card[data-key="${CSS.escape(key)}"]`);
    const rect = card ? card.getBoundingClientRect() : null;
    drawer.classList.toggle("drawer-left", !!rect && rect.left + rect.width / 2 > window.innerWidth / 2);
  }

  // Someone typing in one of the drawer's forms keeps their text: a live change to the task
  // then only says so, and the refresh waits for them.
  function editing(drawer) {
    const active = document.activeElement;
    if (drawer.contains(active) && active.matches("textarea, input, select")) return true;
    return Array.from(drawer.querySelectorAll("form textarea")).some((t) => t.value.trim() !== "");
  }

  function markDrawerStale(drawer, key) {
    if (drawer.querySelector(".drawer-stale")) return;
    const note = document.createElement("p");
    note.className = "drawer-stale";
    note.setAttribute("role", "status");
    note.innerHTML = `${key} changed since this was opened. <button type="button" class="link" data-reopen>Refresh</button>`;
    drawer.querySelector(".drawer-body").prepend(note);
  }

  function showBackdrop(shown) {
    const backdrop = document.getElementById("drawer-backdrop");
    if (backdrop) backdrop.hidden = !shown;
  }

  function closeDrawer() {
    const drawer = document.getElementById("drawer");
    drawerKey = null;
    drawerRequest++; // an answer still on its way must not open it again
    if (drawer.hidden) return;
    drawer.hidden = true;
    showBackdrop(false);
    // By key: a live update may have replaced the card element meanwhile.
    const back = returnFocusTo && /** @type {HTMLElement} */ (board.querySelector(`#columns .card[data-key="${CSS.escape(returnFocusTo.dataset.key)}"]`));
    if (back) back.focus();
    // Forget the drawer the last action re-opened, so a reload shows the plain board.
    const url = new URL(window.location.href);
    if (url.searchParams.has("task")) {
      url.searchParams.delete("task");
      history.replaceState(null, "", url.pathname + url.search);
    }
  }

  // The backdrop only dims the board (it takes no clicks): a card behind it opens at once, and
  // a click on the board outside the drawer, a card, a link or a control closes the drawer.
  board.addEventListener("click", (e) => {
    const target = /** @type {HTMLElement} */ (e.target);
    const drawer = document.getElementById("drawer");
    if (drawer.hidden || drawer.contains(target)) return;
    if (target.closest(".card, a, button, input, select, textarea, label, summary")) return;
    closeDrawer();
  });

  board.addEventListener("click", (e) => {
    const target = /** @type {HTMLElement} */ (e.target);
    if (target.closest("[data-close]")) {
      closeDrawer();
      return;
    }
    const reopen = target.closest("[data-reopen]");
    if (reopen) {
      openDrawer(/** @type {HTMLElement} */ (reopen.closest(".drawer-body")).dataset.key);
      return;
    }
    const focusColumn = /** @type {HTMLElement} */ (target.closest("[data-focus-column]"));
    if (focusColumn) {
      e.preventDefault();
      const col = column(focusColumn.dataset.focusColumn);
      const first = col && visibleCards().find((c) => col.contains(c));
      if (first) first.focus();
      else if (col) col.scrollIntoView();
      return;
    }
    const card = /** @type {HTMLElement} */ (target.closest(".card"));
    if (card) {
      returnFocusTo = card;
      openDrawer(card.dataset.key);
    }
  });
  board.addEventListener("keydown", (e) => {
    const card = /** @type {HTMLElement} */ (/** @type {HTMLElement} */ (e.target).closest(".card"));
    if (card && (e.key === "Enter" || e.key === " ")) {
      e.preventDefault();
      returnFocusTo = card;
      openDrawer(card.dataset.key, { focus: true });
    }
  });

  // -- keyboard: "/" search, j/k next/previous card, Esc closes the drawer --------------------
  const search = /** @type {HTMLInputElement | null} */ (document.getElementById("board-search"));

  function visibleCards() {
    return Array.from(/** @type {NodeListOf<HTMLElement>} */ (document.querySelectorAll("#columns .card"))).filter((c) => !c.hidden && c.offsetParent !== null);
  }

  function moveFocus(step) {
    const cards = visibleCards();
    if (!cards.length) return;
    const next = stepFocus(cards.indexOf(/** @type {HTMLElement} */ (document.activeElement)), step, cards.length);
    cards[next].focus();
    cards[next].scrollIntoView({ block: "nearest", inline: "nearest" });
  }

  document.addEventListener("keydown", (e) => {
    if (e.defaultPrevented || e.ctrlKey || e.metaKey || e.altKey) return;
    if (e.key === "Escape") {
      closeDrawer();
      return;
    }
    if (/** @type {HTMLElement} */ (e.target).closest("input, textarea, select, [contenteditable]")) return;
    if (e.key === "/" && search) {
      e.preventDefault();
      search.focus();
      search.select();
    } else if (e.key === "j" || e.key === "k") {
      e.preventDefault();
      moveFocus(e.key === "j" ? 1 : -1);
    }
  });

  // -- instant narrowing as one types; Enter asks the server (key and whole description) ------
  function narrowCard(card) {
    const text = `${card.dataset.key} ${(card.querySelector(".desc") || {}).textContent || ""}`;
    card.hidden = !narrowedIn(search ? search.value : "", text);
  }
  let narrowTimer = null;
  if (search) {
    search.addEventListener("input", () => {
      const cards = Array.from(/** @type {NodeListOf<HTMLElement>} */ (document.querySelectorAll("#columns .card")));
      for (const card of cards) narrowCard(card);
      clearTimeout(narrowTimer);
      const shown = cards.filter((c) => !c.hidden).length;
      narrowTimer = setTimeout(() => announce(`${shown} card${shown === 1 ? "" : "s"} shown match “${search.value.trim()}”.`), 400);
    });
  }
  const lanes = /** @type {HTMLSelectElement | null} */ (document.getElementById("board-lanes"));
  if (lanes) lanes.addEventListener("change", () => lanes.form.requestSubmit());

  // After an oversight action the server sends the person back here: with `?task=` (a redirect
  // after success) or, after a refusal, as the answer to the POST itself; the drawer they used
  // opens again, and the address bar shows the board rather than the action's URL.
  const reopenKey = board.dataset.openTask || params.get("task");
  if (window.location.pathname !== board.dataset.boardUrl) {
    history.replaceState(null, "", board.dataset.boardUrl + (reopenKey ? `?task=${encodeURIComponent(reopenKey)}` : ""));
  }
  if (reopenKey) openDrawer(reopenKey);
  // After a decision made in the drawer (`?done=KEY`), the drawer stays closed and the focus
  // goes to the next card that waits for a person: a BLOCKED one, else one awaiting approval.
  const doneKey = params.get("done");
  if (doneKey) {
    const url = new URL(window.location.href);
    url.searchParams.delete("done");
    history.replaceState(null, "", url.pathname + url.search);
    const waiting = visibleCards().filter((c) => c.dataset.key !== doneKey);
    const next =
      waiting.find((c) => c.dataset.status === "BLOCKED") ||
      waiting.find((c) => c.querySelector(".awaiting-approval")) ||
      board.querySelector(`#columns .card[data-key="${CSS.escape(doneKey)}"]`);
    if (next instanceof HTMLElement) {
      next.focus();
      next.scrollIntoView({ block: "nearest", inline: "nearest" });
    }
  }

  setInterval(tick, 1000);
  tick();
  liveSocket(board, setStatus, apply);
})();
