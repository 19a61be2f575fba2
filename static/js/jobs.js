// Live job page: polls the job's JSON (the API, session auth) and updates the progress bar,
// state, ETA, loss curve and log until the job is final; then it fetches the page once more and
// swaps in the parts that only a final job has (the metrics panel, no Cancel button, the charged
// GPU-hours), drops the launch banner, and stops polling. Without JS the page is complete as
// rendered; this only keeps it current.
(function () {
  var root = document.getElementById('job');
  if (!root || !window.fetch) { return; }
  var every = parseInt(root.dataset.pollMs || '2000', 10);
  var FINAL = ['succeeded', 'failed', 'cancelled', 'timeout'];
  var final = root.dataset.final === 'true';
  function text(id, value) { var el = document.getElementById(id); if (el) { el.textContent = value; } }
  // The log's newest lines stay in view while it grows, unless the reader scrolled up.
  function showLog(value) {
    var el = document.getElementById('job-log');
    if (!el || el.textContent === value) { return; }
    var atEnd = el.scrollHeight - el.scrollTop - el.clientHeight < 24;
    el.textContent = value;
    if (atEnd) { el.scrollTop = el.scrollHeight; }
  }
  var shown = document.getElementById('job-log');
  if (shown) { shown.scrollTop = shown.scrollHeight; }
  function get(url, type) {
    return fetch(url, {credentials: 'same-origin', headers: {'Accept': type || 'application/json'}})
      .then(function (r) { if (!r.ok) { throw new Error(r.status); } return type ? r.text() : r.json(); });
  }
  function render(job) {
    var p = job.progress || {};
    var bar = document.getElementById('job-progress');
    if (bar) { bar.value = job.percent; bar.textContent = job.percent + '%'; }
    text('job-percent', job.percent);
    var badge = document.querySelector('#job-state .status');
    if (badge) { badge.textContent = job.state_label; badge.className = 'status status-' + job.state; }
    text('job-reason', job.state_label + (job.state_reason ? ': ' + job.state_reason : ''));
    var notice = document.getElementById('job-queue-notice');
    if (notice) { notice.textContent = job.queue_notice || ''; notice.hidden = !job.queue_notice; }
    text('job-epoch', (p.epoch || '-') + ' of ' + (p.epochs || (job.params || {}).epochs || '-'));
    text('job-loss', p.loss != null ? Number(p.loss).toFixed(4) : '-');
    text('job-throughput', job.images_per_s ? Number(job.images_per_s).toFixed(1) + ' images/s' : '-');
    text('job-eta', p.eta_s != null && FINAL.indexOf(job.state) < 0 ? Math.round(p.eta_s) + ' s' : '-');
    var history = p.history || [];
    var chart = document.getElementById('chart-loss');
    if (chart && window.Plotly && window.portalCharts) {
      window.portalCharts.show(chart, {data: [{type: 'scatter', mode: 'lines+markers', name: 'training loss',
        x: history.map(function (h) { return h[0]; }), y: history.map(function (h) { return h[1]; })}],
        layout: chart.baseLayout || {title: {text: 'Training loss'}, height: 300}});
    }
    return FINAL.indexOf(job.state) >= 0;
  }
  // The server's rendering of a final job, swapped in part by part (one template, no copy in JS).
  function settle() {
    return get(window.location.pathname, 'text/html').then(function (html) {
      var fresh = new DOMParser().parseFromString(html, 'text/html');
      ['job-metrics', 'job-actions', 'job-facts', 'job-state', 'job-log', 'job-numbers'].forEach(function (id) {
        var now = document.getElementById(id), next = fresh.getElementById(id);
        if (now && next) { now.replaceWith(document.importNode(next, true)); }
      });
      var banner = document.querySelector('.messages');
      if (banner) { banner.remove(); }
      root.dataset.final = 'true';
      if (window.portalCharts) { window.portalCharts.draw(document.getElementById('job-metrics')); }
    });
  }
  function tick() {
    get(root.dataset.apiUrl).then(function (job) {
      var done = render(job);
      return get(root.dataset.logUrl).then(function (log) {
        if (log.log) { showLog(log.log); }
        if (done) { return settle().then(function () { final = true; }); }
      });
    }).catch(function () { /* a missed poll is retried on the next tick */ })
      .then(function () { if (!final) { setTimeout(tick, every); } });
  }
  if (!final) { setTimeout(tick, every); }
})();
