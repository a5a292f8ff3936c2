// @ts-check
// The board's pure rules: no DOM, no clock, no network. board.js (loaded after this file by
// templates/boards/board.html) calls them; tests/js/board_rules.test.mjs runs them under
// `node --test`, and the task filter's cases are shared with the server's tests
// (tests/data/task_filter_cases.json), so the two filters cannot drift apart.
/* exported BoardRules */

/**
 * A task as a live `task.changed` event carries it (boards.board.live.render.render_changes).
 * @typedef {object} LiveTask
 * @property {string} key
 * @property {string} status
 * @property {number} priority
 * @property {string} criticality
 * @property {string} assigned_to "" when unassigned
 * @property {string} description
 * @property {string | null} goal
 * @property {string[]} sprints
 */

/**
 * The filters the server applied to the page (boards.board.selectors.board.live_filters), already
 * validated and cleaned by its TaskFilter: a refused value is absent, text is stripped, and
 * the default sprint (the open one) is written out. Absent means "not filtered by".
 * @typedef {object} AppliedFilters
 * @property {string[]} [status]
 * @property {string} [agent]
 * @property {number} [priority]
 * @property {string} [criticality]
 * @property {string} [goal]
 * @property {string} [sprint]
 * @property {string} [q]
 */

/**
 * Where a card goes in its column: before index `at` (the column's length: at the end), and
 * whether the column's last card then leaves (a capped column stays at its cap).
 * @typedef {object} Placement
 * @property {number} at
 * @property {boolean} dropLast
 */

const BoardRules = (() => {
  "use strict";

  /**
   * Whether the page's filters keep a live task: the server's TaskFilter, as it reads on rows
   * (exact values; `q` in the key or the description, ignoring case).
   * @param {LiveTask} task
   * @param {AppliedFilters} filters
   * @returns {boolean}
   */
  function matches(task, filters) {
    if (filters.status && filters.status.length && !filters.status.includes(task.status)) return false;
    if (filters.agent !== undefined && task.assigned_to !== filters.agent) return false;
    if (filters.priority !== undefined && task.priority !== filters.priority) return false;
    if (filters.criticality !== undefined && task.criticality !== filters.criticality) return false;
    if (filters.goal !== undefined && task.goal !== filters.goal) return false;
    if (filters.sprint !== undefined && !task.sprints.includes(filters.sprint)) return false;
    if (filters.q) {
      const q = filters.q.toLowerCase();
      if (!task.key.toLowerCase().includes(q) && !task.description.toLowerCase().includes(q)) return false;
    }
    return true;
  }

  /**
   * A live card's place among the column's cards, given their `data-order` strings (sorted as
   * the server sorts: priority, created, id). Past a full column's cap the card is only counted
   * (null); landing inside it pushes the last card out (issue #13).
   * @param {string[]} orders the column's cards, top to bottom
   * @param {string} order the new card's
   * @param {number} cap the column's cap (0: none)
   * @returns {Placement | null}
   */
  function placement(orders, order, cap) {
    let at = orders.findIndex((o) => o > order);
    if (at < 0) at = orders.length;
    if (cap && orders.length >= cap) return at < orders.length ? { at, dropLast: true } : null;
    return { at, dropLast: false };
  }

  /**
   * A countdown or an age, to the second: "4:05", "2h07m", "3d04h" (the sign is the caller's).
   * @param {number} seconds
   * @returns {string}
   */
  function human(seconds) {
    const s = Math.abs(Math.round(seconds));
    if (s >= 86400) return `${Math.floor(s / 86400)}d${String(Math.floor((s % 86400) / 3600)).padStart(2, "0")}h`;
    if (s >= 3600) return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, "0")}m`;
    return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, "0")}`;
  }

  /**
   * As boards.templatetags.states.duration_text: "45 s", "12 min", "2 h 56 min", "3 d 4 h".
   * @param {number} seconds
   * @returns {string}
   */
  function duration(seconds) {
    const s = Math.max(0, Math.floor(seconds));
    if (s < 60) return `${s} s`;
    if (s < 3600) return `${Math.floor(s / 60)} min`;
    if (s < 86400) return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
    return `${Math.floor(s / 86400)} d ${Math.floor((s % 86400) / 3600)} h`;
  }

  /**
   * What the screen reader hears for changes gathered over a moment: the first three, then
   * how many more.
   * @param {string[]} sentences
   * @returns {string}
   */
  function announcement(sentences) {
    const shown = sentences.slice(0, 3);
    const rest = sentences.length - shown.length;
    return shown.join(" ") + (rest > 0 ? ` And ${rest} more change${rest > 1 ? "s" : ""}.` : "");
  }

  /**
   * The card `j`/`k` moves to: from none focused (-1), the first or the last; otherwise one
   * step, stopping at either end.
   * @param {number} at the focused card's index, -1 when none is
   * @param {number} step +1 or -1
   * @param {number} count cards shown (at least one)
   * @returns {number}
   */
  function stepFocus(at, step, count) {
    if (at < 0) return step > 0 ? 0 : count - 1;
    return Math.min(count - 1, Math.max(0, at + step));
  }

  /**
   * Instant narrowing as one types in the search box (before Enter asks the server): the card's
   * key and shown description hold the typed text, ignoring case and surrounding spaces.
   * @param {string} typed
   * @param {string} cardText
   * @returns {boolean}
   */
  function narrowedIn(typed, cardText) {
    const q = typed.trim().toLowerCase();
    return !q || cardText.toLowerCase().includes(q);
  }

  return Object.freeze({ matches, placement, human, duration, announcement, stepFocus, narrowedIn });
})();
