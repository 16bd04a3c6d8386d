// Trend page: one line per cell key with the min-max band of each run's
// repeats in the line's colour, a marker where a detected change (an alert)
// starts, a dotted line where the plan was edited; metric and keys live in
// the URL, so an alert's link opens on its metric and cell.
(function () {
  "use strict";
  var div = document.getElementById("trend-chart");
  if (!div) return;
  var metricSelect = document.getElementById("trend-metric");
  var keySelect = document.getElementById("trend-keys");

  function state() {
    var q = new URLSearchParams(window.location.search);
    return { metric: q.get("metric") || "", keys: q.get("keys") || "" };
  }

  function setState(s) {
    var q = new URLSearchParams();
    if (s.metric) q.set("metric", s.metric);
    if (s.keys) q.set("keys", s.keys);
    history.replaceState(null, "", "?" + q.toString());
    load();
  }

  function fill(select, values, chosen) {
    select.innerHTML = "";
    values.forEach(function (v) {
      var o = document.createElement("option");
      o.value = o.textContent = v;
      o.selected = chosen.indexOf(v) >= 0;
      select.appendChild(o);
    });
  }

  // The metrics in words, in groups (the tool's own, then each telemetry
  // source's): [{group, options: [{value, label}]}] from trend.json.
  function fillGroups(select, groups, chosen) {
    select.innerHTML = "";
    groups.forEach(function (g) {
      var box = document.createElement("optgroup");
      box.label = g.group;
      g.options.forEach(function (m) {
        var o = document.createElement("option");
        o.value = m.value;
        o.textContent = m.label;
        o.selected = m.value === chosen;
        box.appendChild(o);
      });
      select.appendChild(box);
    });
  }

  var COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
    "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"];
  var CHANGE_COLORS = { worse: "#d62728", better: "#2ca02c", changed: "#7f7f7f" };

  // "#1f77b4" -> "rgba(31,119,180,0.15)": a band in its line's colour, faint.
  function faint(hex) {
    var n = parseInt(hex.slice(1), 16);
    return "rgba(" + (n >> 16) + "," + ((n >> 8) & 255) + "," + (n & 255) + ",0.15)";
  }

  var number = window.BenchCharts.number;

  // A line of up to this many runs marks each run with a dot; a longer one is
  // drawn as a line alone (still hovered and clicked run by run): at 10 lines
  // of 200 points the dots were ~40 % of the chart's first draw, and at that
  // density they overlap into a thick line anyway.
  var MARKED_RUNS = 60;

  function traces(data) {
    var out = [];
    data.lines.forEach(function (l, k) {
      var color = COLORS[k % COLORS.length];
      out.push({ x: l.x.concat(l.x.slice().reverse()), y: l.high.concat(l.low.slice().reverse()),
                 fill: "toself", fillcolor: faint(color), line: { width: 0 }, hoverinfo: "skip",
                 showlegend: false, legendgroup: l.key, meta: "band" });
      // A point of a downsampled line stands for n consecutive runs from its run on.
      var text = l.mean.map(function (y, i) {
        var n = (l.n || [])[i];
        return number(y) + " (" + number(l.low[i]) + " to " + number(l.high[i]) + ")" +
          (n > 1 ? ", mean of " + n + " runs" : "");
      });
      var mode = l.x.length <= MARKED_RUNS ? "lines+markers" : "lines";
      out.push({ x: l.x, y: l.mean, name: l.key, mode: mode, legendgroup: l.key,
                 line: { color: color }, marker: { color: color }, customdata: l.runs, text: text,
                 hovertemplate: "run #%{customdata}: %{text}<extra>" + l.key + "</extra>" });
      var i = l.runs.indexOf(l.change);
      if (i >= 0 && l.alert) {
        out.push({ x: [l.x[i]], y: [l.mean[i]], mode: "markers", showlegend: false, meta: "change",
                   marker: { symbol: "x", size: 14, color: CHANGE_COLORS[l.alert.change] || "#7f7f7f" },
                   customdata: [l.runs[i]], text: [l.alert.text],
                   hovertemplate: "%{text}<extra>" + l.key + "</extra>" });
      }
    });
    return out;
  }

  // Plotly is loaded with `defer` after this script, as on the results and
  // comparison pages: the trend data is asked for while Plotly compiles (on
  // the year of make bench-scale, trend.json waited ~1.5 s for it cold).
  // Deferred scripts have run by DOMContentLoaded.
  var plotlyReady = new Promise(function (resolve) {
    if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", resolve);
    else resolve();
  });

  function load() {
    var s = state();
    var q = new URLSearchParams(s);
    fetch(div.dataset.url + "?" + q.toString(), { credentials: "same-origin" })
      .then(function (r) { return r.json(); })
      .then(function (data) { return plotlyReady.then(function () { return data; }); })
      .then(function (data) {
        if (data.error) { div.textContent = data.error; return; }
        if (data.metric_groups) fillGroups(metricSelect, data.metric_groups, data.metric);
        else fill(metricSelect, data.metrics, [data.metric]);
        fill(keySelect, data.keys, s.keys ? s.keys.split("|") : []);
        var edits = data.edits || [];
        var out = traces(data);
        if (edits.length) {
          // A hover point at the top of each plan-edit line carries the diff.
          out.push({ x: edits.map(function (e) { return e.x; }), y: edits.map(function () { return 1; }),
                     yaxis: "y2", mode: "markers", name: "plan edited", marker: { symbol: "triangle-down", size: 10, color: "#7f7f7f" },
                     customdata: edits.map(function (e) { return e.run; }),
                     text: edits.map(function (e) { return e.text; }), hovertemplate: "%{text}<extra></extra>" });
        }
        Plotly.newPlot(div, out, {
          margin: { t: 20 }, xaxis: { title: "run date" },
          // "Transactions per second (tps), higher is better"
          yaxis: { title: { text: (data.metric_title || data.metric) + (data.sense ? ", " + data.sense : "") },
                   tickformat: "," },
          yaxis2: { overlaying: "y", range: [0, 1.02], visible: false, fixedrange: true },
          shapes: edits.map(function (e) {
            return { type: "line", xref: "x", yref: "paper", x0: e.x, x1: e.x, y0: 0, y1: 1,
                     line: { color: "#7f7f7f", width: 1, dash: "dot" } };
          }),
          dragmode: "zoom"
        }, { responsive: true, scrollZoom: true });
        div.dataset.edits = String(edits.length);
        div.dataset.ready = "1";
        div.on("plotly_click", function (ev) {
          var run = ev.points[0].customdata;
          if (run) window.location.href = div.dataset.runUrl.replace("/0/", "/" + run + "/");
        });
      });
  }

  metricSelect.addEventListener("change", function () {
    setState({ metric: metricSelect.value, keys: "" });
  });
  keySelect.addEventListener("change", function () {
    var keys = Array.prototype.filter.call(keySelect.options, function (o) { return o.selected; })
      .map(function (o) { return o.value; });
    setState({ metric: metricSelect.value, keys: keys.join("|") });
  });
  load();
})();
