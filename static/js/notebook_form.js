// The notebook form's estimate: GPUs (or CPUs) x hours, updated as they change (the page states the
// same figure without JavaScript for the defaults).
(function () {
  const form = document.getElementById("notebook-form");
  if (!form) return;
  const out = document.getElementById("notebook-reserve");
  const gpus = form.querySelector("[name=gpus]");
  const hours = form.querySelector("[name=hours]");
  const remaining = parseFloat(form.dataset.remaining);
  // The facility's unit: GPUs, or CPUs where it has no GPUs.
  const many = form.dataset.unitMany || "GPUs", hoursWord = form.dataset.unitHours || "GPU-hours";
  function update() {
    const g = parseInt(gpus.value, 10), h = parseFloat(hours.value);
    if (!(g >= 0) || !(h > 0)) { out.textContent = many + " x hours"; return; }
    const reserve = Math.round(g * h * 100) / 100;
    out.textContent = reserve + " " + hoursWord + (reserve > remaining ? " (more than is left)" : "");
  }
  gpus.addEventListener("input", update);
  hours.addEventListener("input", update);
})();
