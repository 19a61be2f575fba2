// Draws every plotly figure whose JSON the page embedded (<script id="X-data">) into #chart-X.
// window.portalCharts.draw(root) does the same inside a part of the page swapped in later, and
// window.portalCharts.show(target, fig) draws one figure (the job page's live loss curve).
//
// Honest and phone-sized: a figure with no data, or a line of one point, is a sentence, not an
// empty axis (the server's own sentence where it wrote one in layout.meta.empty: what the chart
// still needs); every chart is responsive (re-laid out when the window is resized), and on a
// narrow chart (under SMALL px) the legend goes below the plot, margins shrink, date ticks thin
// out, a log axis labels fewer digits, a long title wraps, axis titles get room and text labels
// are not clipped, so the plot keeps its width.
(function () {
  var SMALL = 600;

  function points(fig) {
    return (fig.data || []).reduce(function (n, t) {
      var values = t.y || t.z || t.values || t.x || [];
      return n + values.length;
    }, 0);
  }

  function tooFew(fig) {
    // The server's own verdict first (core/charts.py not_enough_data): it knows what the chart needs.
    var meta = (fig.layout || {}).meta;
    if (meta && meta.empty) { return meta.empty; }
    var n = points(fig);
    if (n === 0) { return 'No data yet.'; }
    var lines = (fig.data || []).every(function (t) { return (t.type || 'scatter') === 'scatter'; });
    if (lines && n === 1) {
      var t = fig.data.find(function (d) { return (d.y || []).length; });
      return 'One point so far (' + t.x[0] + ': ' + Number(t.y[0]).toPrecision(4) +
        '); the chart is drawn from two.';
    }
    return null;
  }

  // Plotly never wraps a title: on a narrow chart a long one ran off the right edge. Break it
  // into lines that fit (about 8 px a character at 14 px), and give the plot's top the room.
  function wrapTitle(layout, width) {
    if (typeof layout.title === 'string') { layout.title = {text: layout.title}; }
    layout.title.font = {size: 14};
    var words = String(layout.title.text || '').split(' ');
    var fit = Math.max(12, Math.floor((width - 24) / 8));
    var lines = [''];
    words.forEach(function (w) {
      var last = lines[lines.length - 1];
      if (last && (last + ' ' + w).length > fit) { lines.push(w); } else { lines[lines.length - 1] = last ? last + ' ' + w : w; }
    });
    if (lines.length < 2) { return; }
    layout.title.text = lines.join('<br>');
    layout.title.y = 1; layout.title.yref = 'container'; layout.title.yanchor = 'top';
    layout.title.pad = {t: 8};
    layout.margin.t += 18 * (lines.length - 1);
    layout.height = (layout.height || 320) + 18 * (lines.length - 1);
  }

  function fitted(base, width, traces) {
    var layout = JSON.parse(JSON.stringify(base));
    // An axis title gets the room it needs at any width: with a fixed margin the loss chart's
    // "step" and "loss" fell outside the figure.
    ['xaxis', 'yaxis'].forEach(function (k) {
      if (layout[k] && layout[k].title) { layout[k].automargin = true; }
    });
    if (width >= SMALL) { return layout; }
    var m = layout.margin || {};
    layout.margin = {l: Math.min(m.l || 50, 48), r: 8, t: m.t || 40, b: m.b || 40};
    if (layout.showlegend !== false && (base.legend || traces > 1)) {
      // Below the plot, at the bottom of the figure, with the room it needs.
      layout.legend = {orientation: 'h', x: 0, xanchor: 'left', y: 0, yanchor: 'bottom',
        yref: 'container', font: {size: 11}};
      layout.margin.b += 24 * Math.min(traces, 4);
      layout.height = (layout.height || 320) + 24 * Math.min(traces, 4);
    }
    if (layout.title) { wrapTitle(layout, width); }
    // Fewer date ticks, and room for the axis titles: at phone width the burn-down's labels ran
    // into each other ("29 Nov13 Dec") and the daily chart's y ticks into their title.
    var x = layout.xaxis;
    if (x && x.nticks) { x.nticks = Math.min(x.nticks, 4); }
    if (x && typeof x.dtick === 'number' && x.range) {  // whole days (allocations/charts.py day_axis)
      var ticks = (Date.parse(x.range[1]) - Date.parse(x.range[0])) / x.dtick;
      if (ticks > 5) { x.dtick *= Math.ceil(ticks / 5); }
    }
    ['xaxis', 'yaxis'].forEach(function (k) {
      var axis = layout[k];
      if (!axis) { return; }
      axis.automargin = true;
      // A log axis a phone's height labels every digit (7, 8, 9 on top of each other): fewer
      // ticks make plotly label 2 and 5 only, or whole powers of ten.
      if (axis.type === 'log' && axis.dtick === undefined && !axis.tickvals) {
        axis.nticks = Math.min(axis.nticks || 4, 4);
      }
    });
    return layout;
  }

  function say(target, text) {
    if (window.Plotly && target.data) { window.Plotly.purge(target); }
    target.classList.add('chart-empty');
    target.textContent = text;
  }

  function show(target, fig) {
    var empty = tooFew(fig);
    if (empty) { say(target, empty); return; }
    target.classList.remove('chart-empty');
    if (!target.data) { target.textContent = ''; }
    (fig.data || []).forEach(function (t) { if (t.text) { t.cliponaxis = false; } });
    target.baseLayout = fig.layout || {};
    target.layout = fig.layout;
    window.Plotly.react(target, fig.data, fitted(target.baseLayout, target.clientWidth, (fig.data || []).length),
      {responsive: true, displaylogo: false});
  }

  function draw(root) {
    (root || document).querySelectorAll('script[type="application/json"][id$="-data"]').forEach(function (node) {
      var target = document.getElementById('chart-' + node.id.replace(/-data$/, ''));
      if (!target || !window.Plotly) { return; }
      show(target, JSON.parse(node.textContent));
    });
  }

  var pending = null;
  window.addEventListener('resize', function () {
    clearTimeout(pending);
    pending = setTimeout(function () {
      document.querySelectorAll('.chart').forEach(function (target) {
        if (target.data && target.baseLayout) {
          window.Plotly.react(target, target.data, fitted(target.baseLayout, target.clientWidth, target.data.length),
            {responsive: true, displaylogo: false});
        }
      });
    }, 150);
  });

  window.portalCharts = {draw: draw, show: show, SMALL: SMALL};
  draw(document);
})();
