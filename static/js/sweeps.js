// Live sweep page: polls the sweep's JSON (the API) for its cell counts; when they change it
// fetches the page once and swaps in the progress, leaderboard and cells, then stops polling
// once every cell is final. Without JS the page is complete as rendered.
(function () {
  var root = document.getElementById('sweep');
  if (!root || !window.fetch || root.dataset.final === 'true') { return; }
  var every = parseInt(root.dataset.pollMs || '3000', 10);
  var FINAL = ['succeeded', 'failed', 'cancelled', 'timeout', 'stopped_early'];
  var last = null;
  function get(url, type) {
    return fetch(url, {credentials: 'same-origin', headers: {'Accept': type || 'application/json'}})
      .then(function (r) { if (!r.ok) { throw new Error(r.status); } return type ? r.text() : r.json(); });
  }
  function swap() {
    return get(window.location.pathname, 'text/html').then(function (html) {
      var fresh = new DOMParser().parseFromString(html, 'text/html');
      ['sweep-state', 'sweep-progress', 'sweep-board', 'sweep-cells'].forEach(function (id) {
        var now = document.getElementById(id), next = fresh.getElementById(id);
        if (now && next) { now.replaceWith(document.importNode(next, true)); }
      });
      if (window.portalCharts) { window.portalCharts.draw(document.getElementById('sweep-board')); }
    });
  }
  function tick() {
    var done = false;
    get(root.dataset.apiUrl).then(function (sweep) {
      var counts = sweep.counts || {};
      var finished = FINAL.reduce(function (n, s) { return n + (counts[s] || 0); }, 0);
      // A staged sweep (early stopping, a search) may end below its size: the API says.
      done = sweep.finished === undefined ? finished >= sweep.size : sweep.finished;
      var key = JSON.stringify(counts);
      if (key !== last || done) { last = key; return swap(); }
    }).catch(function () { done = false; /* retried on the next tick */ })
      .then(function () { if (done) { root.dataset.final = 'true'; } else { setTimeout(tick, every); } });
  }
  setTimeout(tick, every);
})();
