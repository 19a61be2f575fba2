// The sweep form's total estimate, kept current as the grid is edited: the form's values go to
// POST /api/v1/sweeps/estimate/ (the numbers POST /api/v1/sweeps/ would check; nothing launches).
// Without JS the "Estimate" button shows the same numbers from the server.
(function () {
  var form = document.getElementById('sweep-form');
  var box = document.getElementById('sweep-estimate');
  if (!form || !box || !window.fetch) { return; }
  var timer = null;
  // A figure as the server's pages round it (core/figures.py): 2 places with thousands
  // separators, or two significant digits where that would print a non-zero figure as 0.
  function fig(x) {
    var n = Number(x);
    if (!isFinite(n)) { return String(x); }
    if (n !== 0 && Math.abs(n) < 0.005) { return String(Number(n.toPrecision(2))); }
    return n.toLocaleString('en-US', {minimumFractionDigits: 2, maximumFractionDigits: 2});
  }
  function list(name, cast) {
    var el = form.elements[name];
    return (el && el.value || '').split(',').map(function (v) { return v.trim(); })
      .filter(Boolean).map(cast);
  }
  function num(name) { var el = form.elements[name]; return el && el.value !== '' ? Number(el.value) : undefined; }
  function body() {
    var models = Array.prototype.filter.call(form.querySelectorAll('input[name="models"]'), function (c) { return c.checked; })
      .map(function (c) { return c.value; });
    var fixed = {};
    ['epochs', 'patience', 'size', 'batch_size'].forEach(function (k) { if (num(k) !== undefined) { fixed[k] = num(k); } });
    // form.dataset would be the input named "dataset", hence getAttribute for data-*.
    var params = {dataset: form.elements.dataset.value};
    if (num('synthetic_n') !== undefined) { params.synthetic_n = num('synthetic_n'); }
    var grid = {models: models, lrs: list('lrs', Number), lr_steps: list('lr_steps', Number),
                weight_decays: list('weight_decays', Number), folds: num('folds'), fixed: fixed};
    var stop = form.elements.early_stop;
    if (stop && stop.checked) {
      grid.early_stopping = {method: 'asha', eta: num('eta') || 3, min_epochs: num('min_epochs') || 1};
    }
    return {allocation: Number(form.getAttribute('data-allocation')), gpus: num('gpus'), wall_time_minutes: num('wall_time_minutes'),
            concurrency: num('concurrency'), params: params, grid: grid};
  }
  function show(text, bad) {
    box.textContent = '';
    var p = document.createElement('p');
    p.textContent = text;
    if (bad) { p.className = 'bad'; }
    box.appendChild(p);
  }
  function flat(errors, prefix) {
    return Object.keys(errors).map(function (k) {
      var v = errors[k], name = prefix ? prefix + '.' + k : k;
      return Array.isArray(v) ? name + ': ' + v.join(' ') : (typeof v === 'object' ? flat(v, name) : name + ': ' + v);
    }).join('; ');
  }
  // The facility's unit: GPU-hours, or CPU-hours where it has no GPUs (the API's fields keep
  // their names).
  var hoursWord = form.getAttribute('data-unit-hours') || 'GPU-hours';
  function update() {
    fetch(form.getAttribute('data-estimate-url'), {method: 'POST', credentials: 'same-origin',
      headers: {'Content-Type': 'application/json', 'Accept': 'application/json',
                'X-CSRFToken': form.elements.csrfmiddlewaretoken.value},
      body: JSON.stringify(body())})
      .then(function (r) { return r.json().then(function (data) { return {ok: r.ok, data: data}; }); })
      .then(function (res) {
        var e = res.data;
        if (!res.ok) { show('Not launchable yet: ' + flat(e, ''), true); return; }
        var expected = e.expected_gpu_hours === null || e.expected_gpu_hours === undefined ? '' :
          ': the worst case, every cell to its last epoch. Expected with early stopping: ' + fig(e.expected_gpu_hours) +
          ' ' + hoursWord + ' (' + e.expected_basis + ', an estimate)';
        show(fig(e.total_gpu_hours) + ' ' + hoursWord + ' in total, ' + e.currency + ' ' + fig(e.total_cost) +
             ': ' + e.basis + ' (' + e.source + ')' + expected + '. ' +
             (e.staged ? 'Launching reserves only the cells that run at once. ' : '') +
             fig(e.remaining_gpu_hours) + ' ' + hoursWord + ' are left on the allocation' +
             (e.fits ? '.' : ': this sweep does not fit.'), !e.fits);
      }).catch(function () { /* keep the last estimate; the Estimate button still works */ });
  }
  form.addEventListener('input', function () { clearTimeout(timer); timer = setTimeout(update, 400); });
  form.addEventListener('change', function () { clearTimeout(timer); timer = setTimeout(update, 400); });
  update();
})();
