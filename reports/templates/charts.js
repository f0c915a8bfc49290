/* Draws every chart of the page from its JSON; plotly.js is inlined once above. When all have
   drawn, <body data-charts-drawn="N"> says so (a hook for tests and page checks). */
(function () {
  "use strict";
  var nodes = document.querySelectorAll('script[type="application/json"][data-chart]');
  var look = document.getElementById("chart-template");  // the charts' shared look (plotly_white)
  var template = look ? JSON.parse(look.textContent) : null;
  var drawing = [];
  var config = {responsive: true, displaylogo: false, showLink: false, showSendToCloud: false,
                modeBarButtonsToRemove: ["select2d", "lasso2d"], toImageButtonOptions: {format: "svg"}};
  Array.prototype.forEach.call(nodes, function (node) {
    var target = document.getElementById(node.getAttribute("data-chart"));
    var fig = JSON.parse(node.textContent);
    if (template) fig.layout.template = template;
    drawing.push(Plotly.newPlot(target, fig.data, fig.layout, config));
  });
  document.body.setAttribute("data-charts", String(drawing.length));
  Promise.all(drawing).then(function () {
    document.body.setAttribute("data-charts-drawn", String(drawing.length));
  }, function (err) {
    document.body.setAttribute("data-charts-error", String(err));
    console.error("chart failed to draw:", err);
  });
})();
