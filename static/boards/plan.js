// @ts-check
/**
 * The planning page's reordering (issue 25): a task's priority changes by drag and drop or by
 * keyboard (Alt+↑ / Alt+↓ on a focused row). Both only submit the row's own priority form,
 * the same POST its ↑ / ↓ buttons make without JavaScript, so the server decides as ever.
 */
(function () {
  "use strict";

  const FOCUS_KEY = "liza-plan-focus";

  /**
   * Post `priority` for the task of `row` through its own priority form.
   * @param {HTMLTableRowElement} row
   * @param {number} priority
   */
  function submitPriority(row, priority) {
    const template = row.querySelector("form[data-move]");
    if (!(template instanceof HTMLFormElement)) return;
    const form = /** @type {HTMLFormElement} */ (template.cloneNode(true));
    const field = form.querySelector('input[name="priority"]');
    if (!(field instanceof HTMLInputElement)) return;
    field.value = String(priority);
    form.hidden = true;
    document.body.appendChild(form);
    sessionStorage.setItem(FOCUS_KEY, row.dataset.key || "");
    form.submit();
  }

  /**
   * The row's ↑ or ↓ form, submitted as if its button were pressed.
   * @param {HTMLTableRowElement} row
   * @param {"up" | "down"} direction
   * @returns {boolean} whether there was one
   */
  function move(row, direction) {
    const form = row.querySelector(`form[data-move="${direction}"]`);
    if (!(form instanceof HTMLFormElement)) return false;
    sessionStorage.setItem(FOCUS_KEY, row.dataset.key || "");
    form.requestSubmit();
    return true;
  }

  /** @param {HTMLTableElement} table */
  function wire(table) {
    /** @type {HTMLTableRowElement | null} */
    let dragged = null;
    const rows = /** @type {NodeListOf<HTMLTableRowElement>} */ (
      table.querySelectorAll("tbody tr[data-key]")
    );
    rows.forEach((row) => {
      row.addEventListener("keydown", (event) => {
        if (!event.altKey || event.target !== row) return;
        if (event.key === "ArrowUp" || event.key === "ArrowDown") {
          if (move(row, event.key === "ArrowUp" ? "up" : "down")) event.preventDefault();
        }
      });
      row.addEventListener("dragstart", (event) => {
        dragged = row;
        row.classList.add("dragging");
        if (event.dataTransfer) {
          event.dataTransfer.effectAllowed = "move";
          event.dataTransfer.setData("text/plain", row.dataset.key || "");
        }
      });
      row.addEventListener("dragend", () => {
        row.classList.remove("dragging");
        rows.forEach((r) => r.classList.remove("drop-target"));
        dragged = null;
      });
      row.addEventListener("dragover", (event) => {
        if (dragged && dragged !== row) {
          event.preventDefault();
          row.classList.add("drop-target");
        }
      });
      row.addEventListener("dragleave", () => row.classList.remove("drop-target"));
      row.addEventListener("drop", (event) => {
        event.preventDefault();
        row.classList.remove("drop-target");
        const target = Number(row.dataset.priority);
        if (dragged && dragged !== row && target !== Number(dragged.dataset.priority)) {
          submitPriority(dragged, target);
        }
      });
    });
    const focused = sessionStorage.getItem(FOCUS_KEY);
    if (focused) {
      sessionStorage.removeItem(FOCUS_KEY);
      const row = Array.from(rows).find((r) => r.dataset.key === focused);
      if (row) row.focus();
    }
  }

  document.querySelectorAll("table[data-reorder]").forEach((table) => {
    if (table instanceof HTMLTableElement) wire(table);
  });
})();
