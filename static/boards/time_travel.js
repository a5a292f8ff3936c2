// @ts-check
// Time travel (templates/boards/time_travel.html): the slider steps from event to event (issue
// 25) — the arrow keys go to the previous or next event — and the board of that moment is
// fetched (`?part=board`) and swapped in place, never a reload per step; the address (?at=…)
// follows, so it can be shared. Without JavaScript the ISO 8601 field and its button do the same.
(function () {
  "use strict";
  const slider = /** @type {HTMLInputElement | null} */ (document.getElementById("replay-slider"));
  const field = /** @type {HTMLInputElement | null} */ (document.getElementById("replay-at"));
  const board = document.getElementById("replay-board");
  const status = document.getElementById("replay-step");
  const moment = document.getElementById("replay-moment");
  if (!slider || !field || !board) return;
  /** @type {{at: string, label: string}[]} */
  const steps = JSON.parse(slider.dataset.steps || "[]");
  if (!steps.length) return;
  let timer = 0;
  let request = 0;

  function shown(index) {
    const step = steps[index];
    const text = `event ${index + 1} of ${steps.length}: ${step.label}`;
    slider.setAttribute("aria-valuetext", text);
    if (status) status.textContent = text;
    field.value = step.at;
  }

  async function load(index) {
    const at = steps[index].at;
    const mine = ++request;
    const url = `${slider.dataset.partUrl}?at=${encodeURIComponent(at)}&part=board`;
    const response = await fetch(url, { credentials: "same-origin" });
    if (!response.ok || mine !== request) return;
    const html = await response.text();
    if (mine !== request) return; // a later step was asked meanwhile: its answer wins
    board.innerHTML = html;
    if (moment) {
      moment.textContent = `${at.replace("T", " ").replace(/\.\d+Z$/, "")} UTC`;
      moment.setAttribute("datetime", at);
    }
    history.replaceState(null, "", `?at=${encodeURIComponent(at)}`);
  }

  slider.addEventListener("input", () => {
    const index = Number(slider.value);
    shown(index);
    clearTimeout(timer);
    timer = window.setTimeout(() => load(index), 150); // held arrow keys: only the last step loads
  });
  // A range input fires "change" on each arrow key too: the board is already on its way.
  slider.addEventListener("change", (e) => e.preventDefault());
  shown(Number(slider.value));
})();
