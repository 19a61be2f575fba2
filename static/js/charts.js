// Draws every plotly figure whose JSON the page embedded (<script id="X-data">) into #chart-X.
// window.portalCharts.draw(root) does the same inside a part of the page swapped in later.
(function () {
  function draw(root) {
    (root || document).querySelectorAll('script[type="application/json"][id$="-data"]').forEach(function (node) {
      var target = document.getElementById('chart-' + node.id.replace(/-data$/, ''));
      if (!target || !window.Plotly) { return; }
      var fig = JSON.parse(node.textContent);
      target.layout = fig.layout;
      window.Plotly.newPlot(target, fig.data, fig.layout, {responsive: true, displaylogo: false});
    });
  }
  window.portalCharts = {draw: draw};
  draw(document);
})();
