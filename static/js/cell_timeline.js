// Cell page: the tool's per-second series above, the hosts' and the
// database's telemetry below, on one time axis. The chosen series and the
// zoomed range live in the URL (?tool=tps&tele=client:cpu_busy_pct&x0=3&x1=9); the x axis is
// seconds from the measure's start, with the warmup and stress start before 0.
(function () {
  "use strict";
  var div = document.getElementById("cell-timeline");
  if (!div) return;
  var data = JSON.parse(document.getElementById("timeline-data").textContent);
  var toolSelect = document.getElementById("timeline-tool");
  var teleSelect = document.getElementById("timeline-telemetry");

  function state() {
    var q = new URLSearchParams(window.location.search);
    return {
      tool: q.get("tool") || data.tool[0] || "",
      tele: q.has("tele") ? q.get("tele").split(",").filter(Boolean) : data.defaults,
      x0: q.get("x0"), x1: q.get("x1"),
    };
  }

  function save(s) {
    var q = new URLSearchParams(window.location.search);
    q.set("tool", s.tool);
    q.set("tele", s.tele.join(","));
    ["x0", "x1"].forEach(function (k) { if (s[k] !== null && s[k] !== undefined) q.set(k, s[k]); else q.delete(k); });
    history.replaceState(null, "", "?" + q.toString());
  }

  function fill() {
    var s = state();
    data.tool.forEach(function (m) { toolSelect.add(new Option(m, m, false, m === s.tool)); });
    Object.keys(data.sources).forEach(function (source) {
      if (source === "tool") return;
      Object.keys(data.sources[source]).forEach(function (m) {
        var v = source + ":" + m;
        teleSelect.add(new Option(v, v, false, s.tele.indexOf(v) >= 0));
      });
    });
  }

  // The phases sampled (warmup, stress, measure: seconds from the measure's
  // start) as shaded spans across both panels, each named at its start.
  var PHASE_COLOURS = { warmup: "rgba(120, 120, 120, 0.14)", stress: "rgba(214, 96, 77, 0.12)", measure: "rgba(0, 0, 0, 0)" };
  var PHASE_LABELS = { warmup: "warmup", stress: "stress start", measure: "measure" };

  function phaseShapes() {
    return (data.phases || []).map(function (p) {
      var measure = p.phase === "measure";
      return {
        type: "rect", xref: "x", yref: "paper", x0: p.start, x1: p.end, y0: 0, y1: 1,
        fillcolor: PHASE_COLOURS[p.phase] || "rgba(0, 0, 0, 0.06)", layer: "below",
        line: measure ? { width: 1, color: "#444", dash: "dot" } : { width: 0 },
        name: p.phase,
      };
    });
  }

  function phaseLabels() {
    return (data.phases || []).map(function (p, i) {
      return {
        xref: "x", yref: "paper", x: p.start, y: 1, yanchor: "bottom", xanchor: "left",
        yshift: i % 2 ? 12 : 0, showarrow: false, text: PHASE_LABELS[p.phase] || p.phase,
        font: { size: 11, color: "#555" },
      };
    });
  }

  function draw() {
    var s = state();
    var traces = [];
    var tool = (data.sources.tool || {})[s.tool];
    if (tool && tool.low) {
      // Downsampled by retention: each minute's min..max as a band under its mean.
      traces.push({ type: "scatter", mode: "lines", x: tool.x, y: tool.high, yaxis: "y", line: { width: 0 }, showlegend: false, hoverinfo: "skip" });
      traces.push({ type: "scatter", mode: "lines", name: "minute min–max", x: tool.x, y: tool.low, yaxis: "y", line: { width: 0 }, fill: "tonexty" });
    }
    if (tool) traces.push({ type: "scatter", mode: "lines", name: tool.low ? s.tool + " (minute mean)" : s.tool, x: tool.x, y: tool.y, yaxis: "y" });
    s.tele.forEach(function (v) {
      var i = v.indexOf(":"), source = v.slice(0, i), m = v.slice(i + 1);
      var series = (data.sources[source] || {})[m];
      if (series) traces.push({ type: "scatter", mode: "lines", name: v, x: series.x, y: series.y, yaxis: "y2" });
    });
    var xaxis = { title: { text: "seconds" }, anchor: "y2" };
    if (s.x0 !== null && s.x1 !== null) xaxis.range = [Number(s.x0), Number(s.x1)];
    var layout = {
      height: 520, margin: { t: 30 }, xaxis: xaxis,
      yaxis: { domain: [0.55, 1], title: { text: s.tool || "tool" } },
      yaxis2: { domain: [0, 0.45], title: { text: "telemetry" } },
      legend: { orientation: "h" },
      shapes: phaseShapes(), annotations: phaseLabels(),
    };
    return Plotly.react(div, traces, layout, { displaylogo: false, responsive: true }).then(function () {
      div.dataset.ready = "1";
    });
  }

  function onChange() {
    var s = state();
    s.tool = toolSelect.value;
    s.tele = Array.prototype.filter.call(teleSelect.options, function (o) { return o.selected; })
      .map(function (o) { return o.value; });
    save(s);
    draw();
  }

  fill();
  toolSelect.addEventListener("change", onChange);
  teleSelect.addEventListener("change", onChange);
  document.addEventListener("DOMContentLoaded", function () {
    draw().then(function () {
      div.on("plotly_relayout", function (e) {
        var s = state();
        if (e["xaxis.autorange"]) { s.x0 = s.x1 = null; }
        else if (e["xaxis.range[0]"] !== undefined) {
          s.x0 = Number(e["xaxis.range[0]"]).toFixed(2);
          s.x1 = Number(e["xaxis.range[1]"]).toFixed(2);
        } else return;
        save(s);
      });
    });
  });
})();
