// Draws every plotly figure whose JSON the page embedded (<script id="X-data">) into #chart-X.
(function () {
  document.querySelectorAll('script[type="application/json"][id$="-data"]').forEach(function (node) {
    var target = document.getElementById('chart-' + node.id.replace(/-data$/, ''));
    if (!target || !window.Plotly) { return; }
    var fig = JSON.parse(node.textContent);
    window.Plotly.newPlot(target, fig.data, fig.layout, {responsive: true, displaylogo: false});
  });
})();
