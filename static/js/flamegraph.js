// Flame graphs of a cell's CPU profiles and the differential flame graph of
// two cells (d3-flame-graph, static/vendor/d3-flamegraph.min.js). Each
// <div class="flamegraph" data-tree="ID"> draws the tree of the json_script
// element ID; data-differential colours frames by their change: red grew,
// blue shrank (the tree's "delta", in points of the samples).
(function () {
  "use strict";
  if (!window.benchFlame) return;
  var flame = window.benchFlame;

  function draw(div) {
    var source = document.getElementById(div.getAttribute("data-tree"));
    if (!source) return;
    var tree = JSON.parse(source.textContent);
    var chart = flame.flamegraph()
      .width(Math.max(320, div.clientWidth || 960))
      .cellHeight(16)
      .minFrameSize(1)
      .transitionDuration(0)
      .sort(true)
      .title("");
    if (div.hasAttribute("data-differential")) {
      chart.setColorMapper(function (d, original) {
        return flame.differentialColorMapper(d, original);
      });
    }
    flame.select(div).datum(tree).call(chart);
    div.setAttribute("data-drawn", "true");
  }

  document.querySelectorAll(".flamegraph[data-tree]").forEach(draw);
})();
