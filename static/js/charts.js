// Small chart helpers shared by the results, comparison and share pages.
// Data comes from the pages' JSON endpoints (benchapp.results.chart_data).
(function () {
  "use strict";
  const CONFIG = { responsive: true, displaylogo: false };

  function layout(title, xTitle, yTitle, extra) {
    return Object.assign({
      title: { text: title, font: { size: 14 } },
      margin: { t: 40, r: 10, b: 50, l: 60 },
      xaxis: { title: { text: xTitle } },
      yaxis: { title: { text: yTitle }, rangemode: "tozero" },
      legend: { orientation: "h", y: -0.25 },
    }, extra || {});
  }

  // The y axis title with the metric's unit, from the catalog row the JSON carries.
  function axisTitle(chart) {
    return chart.metric_info ? chart.metric_info.title : chart.metric;
  }

  // One trace per pivot column (a line of the sweep): mean with min–max error bars.
  function columnTraces(chart, build) {
    return chart.columns.map((col, j) => {
      const x = [], mean = [], plus = [], minus = [], values = [];
      chart.rows.forEach((row, i) => {
        const s = chart.cells[i][j];
        if (!s) return;
        x.push(chart.numeric_x ? row.key[0] : row.label);
        mean.push(s.mean);
        plus.push(s.max - s.mean);
        minus.push(s.mean - s.min);
        values.push(s.values);
      });
      return build({ name: col.label || chart.metric, x, mean, plus, minus, values });
    });
  }

  function sweep(div, chart) {
    const traces = columnTraces(chart, (t) => ({
      type: "scatter", mode: "lines+markers", name: t.name, x: t.x, y: t.mean,
      error_y: { type: "data", symmetric: false, array: t.plus, arrayminus: t.minus },
    }));
    return Plotly.newPlot(div, traces,
      layout(chart.metric + " vs " + chart.x_dim, chart.x_dim, axisTitle(chart)), CONFIG);
  }

  function bars(div, chart) {
    const traces = columnTraces(chart, (t) => ({
      type: "bar", name: t.name, x: t.x.map(String), y: t.mean,
      error_y: { type: "data", symmetric: false, array: t.plus, arrayminus: t.minus },
    }));
    return Plotly.newPlot(div, traces,
      layout(chart.metric + " by " + chart.x_dim, chart.x_dim, axisTitle(chart),
        { barmode: "group", xaxis: { type: "category", title: { text: chart.x_dim } } }),
      CONFIG);
  }

  // Box plots of the repeats: every raw value of each (x, line) point.
  function box(div, chart) {
    const traces = columnTraces(chart, (t) => {
      const x = [], y = [];
      t.values.forEach((vals, i) => vals.forEach((v) => { x.push(String(t.x[i])); y.push(v); }));
      return { type: "box", name: t.name, x, y, boxpoints: "all", jitter: 0.3 };
    });
    return Plotly.newPlot(div, traces,
      layout("repeats of " + chart.metric, chart.x_dim, axisTitle(chart),
        { boxmode: "group", xaxis: { type: "category", title: { text: chart.x_dim } } }),
      CONFIG);
  }

  // SVG lines, even where the payload suggests "scattergl": the server
  // downsamples each series to 2 x the chart's width, and the vendored Plotly
  // bundle (cartesian) has no WebGL traces.
  function series(div, payload, metric) {
    const traces = payload.traces.map((t) => ({
      type: "scatter", mode: "lines", name: t.label, x: t.x, y: t.y,
    }));
    return Plotly.newPlot(div, traces, layout(metric + " per second", "seconds", metric), CONFIG);
  }

  function png(divId) {
    const div = document.getElementById(divId);
    return Plotly.downloadImage(div, { format: "png", filename: divId, width: 1200, height: 600 });
  }

  function getJSON(url) {
    return fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then((r) => { if (!r.ok) throw new Error(r.status); return r.json(); });
  }

  function empty(div, text) {
    div.textContent = text;
    div.classList.add("chart-empty");
  }

  function fillCells(select, cells) {
    cells.forEach(([id, label], i) => {
      const option = new Option(label, id, i === 0, i === 0);
      select.add(option);
    });
  }

  // Wire a page's #charts section: results JSON -> three charts and the
  // series form's cell list; then the first cell's series.
  function wire(section) {
    const query = window.location.search;
    const form = section.querySelector(".series-form");
    getJSON(section.dataset.resultsUrl + query).then((data) => {
      fillCells(form.cells, data.cells || []);
      plot();
      const chart = data.chart;
      if (!chart || !chart.rows.length) {
        ["chart-sweep", "chart-bars", "chart-box"].forEach((id) =>
          empty(document.getElementById(id), "No measurements to chart."));
        return;
      }
      sweep(document.getElementById("chart-sweep"), chart);
      bars(document.getElementById("chart-bars"), chart);
      box(document.getElementById("chart-box"), chart);
    });
    function plot() {
      const cells = Array.from(form.cells.selectedOptions).map((o) => o.value).join(",");
      const div = document.getElementById("chart-series");
      const width = Math.max(div.clientWidth || 800, 100);
      const params = new URLSearchParams({ cells, metric: form.metric.value, width });
      getJSON(section.dataset.seriesUrl + "?" + params).then((payload) => {
        if (!payload.traces.some((t) => t.x.length)) return empty(div, "No per-second values for this metric.");
        div.classList.remove("chart-empty");
        div.textContent = "";
        series(div, payload, form.metric.value);
      });
    }
    form.addEventListener("submit", (e) => { e.preventDefault(); plot(); });
    section.querySelectorAll("button.png").forEach((b) =>
      b.addEventListener("click", () => png(b.dataset.png)));
  }

  window.BenchCharts = { sweep, bars, box, series, png, wire };
})();
