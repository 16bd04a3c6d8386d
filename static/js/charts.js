// Small chart helpers shared by the results, comparison and share pages.
// Data comes with the page (benchapp.charts.chart_data) and from series.json.
(function () {
  "use strict";
  const CONFIG = { responsive: true, displaylogo: false };

  function layout(title, xTitle, yTitle, extra) {
    return Object.assign({
      title: { text: title, font: { size: 14 } },
      margin: { t: 40, r: 10, b: 50, l: 60 },
      xaxis: { title: { text: xTitle } },
      yaxis: { title: { text: yTitle }, rangemode: "tozero", tickformat: "," },
      legend: { orientation: "h", y: -0.25 },
    }, extra || {});
  }

  // The y axis title with the metric's unit and which way is better
  // ("higher is better"), from the catalog row the JSON carries.
  function axisTitle(chart) {
    const info = chart.metric_info;
    if (!info) return chart.metric;
    return info.sense ? info.title + " · " + info.sense : info.title;
  }

  const COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
    "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"];

  // One entry per pivot column (a line, or a bar colour, of one panel):
  // mean with min–max error bars and the raw repeat values.
  // A point whose cells all failed (n = 0, errors) is a gap in the line (null)
  // and goes to `failed`, drawn as a marked point with the error on hover.
  function columnData(chart) {
    return chart.columns.map((col, j) => {
      const x = [], mean = [], plus = [], minus = [], values = [];
      const failed = { x: [], errors: [] };
      chart.rows.forEach((row, i) => {
        const s = chart.cells[i][j];
        if (!s) return;
        const at = chart.numeric_x && chart.type !== "bar" ? row.key[0] : String(row.label);
        if (s.errors && s.errors.length) {
          failed.x.push(at);
          failed.errors.push(s.errors.join("<br>"));
        }
        if (!s.n) {
          x.push(at); mean.push(null); plus.push(null); minus.push(null); values.push([]);
          return;
        }
        x.push(at);
        const point = s[chart.point_statistic || "mean"];
        mean.push(point);
        // the tool's own min–max over its iterations (mysqlslap) when it has one
        const lo = s.lo !== null && s.lo !== undefined ? Math.min(s.lo, s.min) : s.min;
        const hi = s.hi !== null && s.hi !== undefined ? Math.max(s.hi, s.max) : s.max;
        plus.push(hi - point);
        minus.push(point - lo);
        values.push(s.values);
      });
      return { name: col.series || chart.metric, facet: col.facet || "", x, mean, plus, minus, values, failed };
    });
  }

  // A line chart shows every repeat as a dot beside its mean up to this many
  // dots; beyond, means and min–max bars only, with a switch under the chart
  // to add them: a thousand dots blur into each other, and each is an SVG node
  // the browser builds (they took a third of a 2-run comparison's first draw).
  const MAX_DOTS = 300;

  function dotCount(chart) {
    if (chart.type !== "line") return 0;
    let n = 0;
    chart.cells.forEach((line) => line.forEach((s) => { if (s && s.values.length > 1) n += s.values.length; }));
    return n;
  }

  // The failed points of one series: red crosses on the x axis (y = 0, or
  // the bottom of a log axis), hover "failed: <error>".
  function failedTrace(t, common, floor) {
    return Object.assign({}, common, { type: "scatter", mode: "markers", x: t.failed.x,
      y: t.failed.x.map(() => floor || 0), name: t.name + " (failed)", showlegend: false,
      text: t.failed.errors, hovertemplate: "<b>" + t.name + " failed</b><br>%{text}<extra></extra>",
      cliponaxis: false, marker: { symbol: "x-thin-open", size: 14, color: "#d62728",
        line: { width: 3, color: "#d62728" } }, meta: "failed", legendgroup: t.name });
  }

  // Traces of the chart's type; each series keeps one colour in every panel.
  function traces(chart, dots) {
    const panels = chart.facets.length ? chart.facets : [""];
    const names = [];
    const out = [];
    const marks = [];  // failed points, drawn over the data
    columnData(chart).forEach((t) => {
      if (!names.includes(t.name)) names.push(t.name);
      const k = names.indexOf(t.name);
      const p = Math.max(panels.indexOf(t.facet), 0);
      const axes = { xaxis: "x" + (p ? p + 1 : ""), yaxis: "y" + (p ? p + 1 : "") };
      const color = COLORS[k % COLORS.length];
      const common = Object.assign({ name: t.name, legendgroup: t.name, showlegend: p === 0 }, axes);
      const errors = { type: "data", symmetric: false, array: t.plus, arrayminus: t.minus };
      if (t.failed.x.length) marks.push(failedTrace(t, common, chart.log_y ? chart.y_floor : 0));
      if (chart.type === "box") {
        const x = [], y = [];
        t.values.forEach((vals, i) => vals.forEach((v) => { x.push(String(t.x[i])); y.push(v); }));
        out.push(Object.assign({ type: "box", x, y, boxpoints: "all", jitter: 0.3,
          marker: { color } }, common));
        return;
      }
      if (chart.type === "bar") {
        out.push(Object.assign({ type: "bar", x: t.x, y: t.mean, error_y: errors,
          marker: { color } }, common));
        return;
      }
      out.push(Object.assign({ type: "scatter",
        mode: "lines+markers", x: t.x, y: t.mean, error_y: errors,
        line: { color }, marker: { color } }, common));
      // Every repeat as a small dot beside its mean, so the spread shows.
      const rx = [], ry = [];
      t.values.forEach((vals, i) => { if (vals.length > 1) vals.forEach((v) => { rx.push(t.x[i]); ry.push(v); }); });
      if (dots && rx.length) {
        out.push(Object.assign({}, common, { type: "scatter", mode: "markers", x: rx, y: ry,
          name: t.name + " (repeats)", showlegend: false, hoverinfo: "x+y",
          marker: { color, size: 8, symbol: "circle-open" } }));
      }
    });
    return out.concat(marks);
  }

  // Numbers as people write them: 10K, 1.5M, 3,732 (3 significant digits and
  // K/M/B/T from 10,000 on; 4 significant digits below). Written out, not
  // Intl.NumberFormat: building a compact formatter loads the locale's data,
  // 30-50 ms of a cold page's main thread before its first chart.
  const UNITS = [[1e12, "T"], [1e9, "B"], [1e6, "M"], [1e3, "K"]];
  function grouped(text) {
    const [whole, fraction] = text.split(".");
    const digits = whole.replace(/\B(?=(\d{3})+(?!\d))/g, ",");
    return fraction ? digits + "." + fraction : digits;
  }
  function number(v) {
    if (typeof v !== "number" || !isFinite(v)) return String(v);
    const size = Math.abs(v);
    if (size < 10000) return grouped(String(Number(v.toPrecision(4))));
    for (let i = 0; i < UNITS.length; i++) {
      const [unit, suffix] = UNITS[i];
      if (size < unit) continue;
      const scaled = Number((v / unit).toPrecision(3));
      // 999,950 rounds to 1000K: write it with the next unit up, 1M
      if (Math.abs(scaled) >= 1000 && i > 0) return number(Math.sign(v) * UNITS[i - 1][0]);
      return String(scaled) + suffix;
    }
    return String(v);
  }

  // A numeric x is a discrete parameter (threads, cores, block size in KiB):
  // its ticks are its values, so no "1.5 threads"; a log axis when the values
  // span a decade (benchapp.charts.spans_decade).
  function xAxis(chart, type) {
    const axis = { title: { text: chart.x_dim }, type };
    if (type !== "category" && chart.x_ticks && chart.x_ticks.length) {
      axis.tickvals = chart.x_ticks;
      axis.ticktext = chart.x_ticks.map(number);
    }
    return axis;
  }

  // The results chart: one panel per facet value, stacked, axes titled from
  // the metric catalog (unit included). dots: each repeat as a dot (default:
  // up to MAX_DOTS of them).
  function main(div, chart, dots) {
    if (dots === undefined) dots = dotCount(chart) <= MAX_DOTS;
    const panels = chart.facets.length ? chart.facets : [""];
    const extra = { annotations: [] };
    const xType = chart.type === "line" && chart.numeric_x ? (chart.log_x ? "log" : "linear") : "category";
    panels.forEach((facet, p) => {
      const n = p ? p + 1 : "";
      extra["xaxis" + n] = xAxis(chart, xType);
      // values 100× apart over a text axis: a log y, or the small bars vanish
      extra["yaxis" + n] = chart.log_y
        ? { title: { text: axisTitle(chart) + " (log scale)" }, type: "log", tickformat: "," }
        : { title: { text: axisTitle(chart) }, rangemode: "tozero", tickformat: "," };
      if (facet) {
        extra.annotations.push({ text: chart.facet_dims.join(" · ") + ": " + facet, showarrow: false,
          xref: "x" + n + " domain", yref: "y" + n + " domain", x: 0.5, y: 1.08, font: { size: 12 } });
      }
    });
    if (panels.length > 1) {
      extra.grid = { rows: panels.length, columns: 1, pattern: "independent", ygap: 0.35 };
      extra.height = 340 * panels.length;
    }
    if (chart.type === "bar") extra.barmode = "group";
    if (chart.type === "box") extra.boxmode = "group";
    const verb = chart.type === "line" ? " vs " : " by ";
    const stat = chart.point_statistic && chart.point_statistic !== "mean" ? chart.point_statistic + " " : "";
    const title = stat + (chart.metric_info ? chart.metric_info.label : chart.metric) + verb + chart.x_dim;
    return Plotly.newPlot(div, traces(chart, dots), layout(title, chart.x_dim, axisTitle(chart), extra), CONFIG);
  }

  // SVG lines: the server downsamples each series to 2 x the chart's width,
  // and the vendored Plotly build (scatter, bar, box) has no WebGL traces.
  function series(div, payload, metric) {
    const traces = payload.traces.map((t) => ({
      type: "scatter", mode: "lines", name: t.label, x: t.x, y: t.y,
    }));
    return Plotly.newPlot(div, traces, layout(metric + " per second", "seconds", metric), CONFIG);
  }

  // The switch under a chart with more than MAX_DOTS repeats: shown only then.
  function dotSwitch(label, div, chart) {
    const n = dotCount(chart);
    if (!label || n <= MAX_DOTS) return;
    label.querySelector(".dot-count").textContent = n.toLocaleString("en");
    label.hidden = false;
    const box = label.querySelector("input");
    box.addEventListener("change", () => plotlyReady.then(() => main(div, chart, box.checked)));
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

  // The pages load Plotly with `defer`, after their own scripts: those ask
  // for the series while Plotly compiles. Deferred scripts have run by
  // DOMContentLoaded.
  const plotlyReady = new Promise((resolve) => {
    if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", resolve);
    else resolve();
  });

  // Wire a page's #charts section: the results chart from the data the page
  // carries (#charts-data, what results.json serves), the series form's cell
  // list and the first cell's series from series.json, asked for first.
  function wire(section) {
    const data = JSON.parse(document.getElementById("charts-data").textContent);
    const form = section.querySelector(".series-form");
    if (form) {
      fillCells(form.cells, data.cells || []);
      form.addEventListener("submit", (e) => { e.preventDefault(); plot(); });
      plot();
    }
    const div = document.getElementById("chart-main");
    if (!data.chart || !data.chart.rows.length) empty(div, "No measurements to chart.");
    else {
      plotlyReady.then(() => main(div, data.chart)).then(() => { div.dataset.ready = "1"; });
      dotSwitch(section.querySelector(".repeat-dots"), div, data.chart);
    }
    function plot() {
      const cells = Array.from(form.cells.selectedOptions).map((o) => o.value).join(",");
      const div = document.getElementById("chart-series");
      // The window's width, an upper bound of the chart's: reading the
      // chart's own width here would lay out the page while it still loads.
      const width = Math.max(window.innerWidth || 800, 100);
      const params = new URLSearchParams({ cells, metric: form.metric.value, width });
      Promise.all([getJSON(section.dataset.seriesUrl + "?" + params), plotlyReady]).then(([payload]) => {
        if (!payload.traces.some((t) => t.x.length)) return empty(div, "No per-second values for this metric.");
        div.classList.remove("chart-empty");
        div.textContent = "";
        series(div, payload, form.metric.value);
      });
    }
    section.querySelectorAll("button.png").forEach((b) =>
      b.addEventListener("click", () => png(b.dataset.png)));
  }

  window.BenchCharts = { main, series, png, wire, number };
})();
