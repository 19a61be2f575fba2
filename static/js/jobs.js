// Live job page: polls the job's JSON (the API, session auth) and updates the progress bar,
// state, ETA, loss curve and log until the job is final. Without JS the page is complete as
// rendered; this only keeps it current.
(function () {
  var root = document.getElementById('job');
  if (!root || !window.fetch) { return; }
  var every = parseInt(root.dataset.pollMs || '2000', 10);
  var final = root.dataset.final === 'true';
  function text(id, value) { var el = document.getElementById(id); if (el) { el.textContent = value; } }
  function get(url) {
    return fetch(url, {credentials: 'same-origin', headers: {'Accept': 'application/json'}})
      .then(function (r) { if (!r.ok) { throw new Error(r.status); } return r.json(); });
  }
  function render(job) {
    var p = job.progress || {};
    var bar = document.getElementById('job-progress');
    if (bar) { bar.value = job.percent; bar.textContent = job.percent + '%'; }
    text('job-percent', job.percent);
    var badge = document.querySelector('#job-state .status');
    if (badge) { badge.textContent = job.state_label; badge.className = 'status status-' + job.state; }
    text('job-reason', job.state_label + (job.state_reason ? ': ' + job.state_reason : ''));
    text('job-epoch', (p.epoch || '-') + ' of ' + (p.epochs || (job.params || {}).epochs || '-'));
    text('job-loss', p.loss != null ? p.loss.toFixed(4) : '-');
    text('job-throughput', p.images_per_s ? p.images_per_s.toFixed(1) + ' images/s' : '-');
    text('job-eta', p.eta_s != null ? Math.round(p.eta_s) + ' s' : '-');
    text('job-charged', job.gpu_seconds + ' GPU-seconds');
    var history = p.history || [];
    var chart = document.getElementById('chart-loss');
    if (chart && window.Plotly && history.length) {
      window.Plotly.react(chart, [{type: 'scatter', mode: 'lines+markers', name: 'training loss',
        x: history.map(function (h) { return h[0]; }), y: history.map(function (h) { return h[1]; })}],
        chart.layout || {title: {text: 'Training loss'}, height: 300});
    }
    final = ['succeeded', 'failed', 'cancelled', 'timeout'].indexOf(job.state) >= 0;
  }
  function tick() {
    get(root.dataset.apiUrl).then(function (job) {
      render(job);
      return get(root.dataset.logUrl);
    }).then(function (log) {
      if (log.log) { text('job-log', log.log); }
    }).catch(function () { /* a missed poll is retried on the next tick */ })
      .then(function () { if (!final) { setTimeout(tick, every); } });
  }
  if (!final) { setTimeout(tick, every); }
})();
