// Live parts of a server-rendered page whose state moves by itself (a notebook starting or
// stopping and then charged, an allocation being provisioned, a request's allocation coming
// up). The page marks itself while its state can still move:
//   <div hidden data-live="id-a id-b" data-poll-ms="2000"></div>
// This re-fetches the page's own HTML and swaps in the elements with those ids (one template,
// no copy of it in JS) until the fresh page has no marker: its state settled, the last swap
// shows it. A failed fetch is retried more slowly; without JS the page is complete as rendered
// and a reload shows the same.
(function () {
  var marker = document.querySelector('[data-live]');
  if (!marker || !window.fetch || !window.DOMParser) { return; }
  var ids = marker.dataset.live.split(/\s+/).filter(Boolean);
  var failures = 0;
  function every(el) { return parseInt((el && el.dataset.pollMs) || '2000', 10); }
  function swap(fresh) {
    ids.forEach(function (id) {
      var now = document.getElementById(id), next = fresh.getElementById(id);
      if (now && next) { now.replaceWith(document.importNode(next, true)); }
    });
  }
  function tick() {
    fetch(window.location.pathname + window.location.search, {
      credentials: 'same-origin', headers: {'Accept': 'text/html'}, cache: 'no-store'
    }).then(function (r) {
      if (!r.ok) { throw new Error(r.status); }
      return r.text();
    }).then(function (html) {
      failures = 0;
      var fresh = new DOMParser().parseFromString(html, 'text/html');
      swap(fresh);
      var still = fresh.querySelector('[data-live]');
      if (still) { window.setTimeout(tick, every(still)); }
    }).catch(function () {
      failures += 1;
      if (failures < 20) { window.setTimeout(tick, Math.min(30000, every(marker) * (failures + 1))); }
    });
  }
  window.setTimeout(tick, every(marker));
})();
