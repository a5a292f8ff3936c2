// @ts-check
// Time travel (templates/boards/time_travel.html): the slider picks a moment; letting go of it
// loads the board of that moment, whose URL (?at=…) can be shared. Without JavaScript the
// ISO 8601 field and its button do the same.
(function () {
  "use strict";
  const slider = /** @type {HTMLInputElement | null} */ (document.getElementById("replay-slider"));
  const field = /** @type {HTMLInputElement | null} */ (document.getElementById("replay-at"));
  const form = /** @type {HTMLFormElement | null} */ (document.getElementById("replay-form"));
  if (!slider || !field || !form) return;
  const iso = (seconds) => new Date(seconds * 1000).toISOString().replace(/\.\d{3}Z$/, "Z");
  slider.addEventListener("input", () => { field.value = iso(Number(slider.value)); });
  slider.addEventListener("change", () => { field.value = iso(Number(slider.value)); form.submit(); });
})();
