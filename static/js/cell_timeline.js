// Cell page: the tool's per-second series above, the hosts' and the
// database's telemetry below, on one time axis. The chosen series and the
// zoomed range live in the URL (?tool=tps&tele=client:cpu_busy_pct&x0=3&x1=9); the x axis is
// seconds from the measure's start, with the warmup and stress start before 0.
// It opens on the tool's main rate and the machine's CPU (the page's
// tool_default and defaults); a panel with nothing chosen is not drawn, and
// telemetry of different units gets one y axis per unit (% beside /s).
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
      tool: q.has("tool") ? q.get("tool") : (data.tool_default || data.tool[0] || ""),
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

  function words(key) { return (data.labels || {})[key] || key; }
  function unitOf(key) { return (data.units || {})[key] || ""; }
  function titled(key) { var u = unitOf(key); return words(key) + (u ? " (" + u + ")" : ""); }

  function fill() {
    var s = state();
    toolSelect.add(new Option("(none)", "", false, s.tool === ""));
    data.tool.forEach(function (m) { toolSelect.add(new Option(titled("tool:" + m), m, false, m === s.tool)); });
    Object.keys(data.sources).forEach(function (source) {
      if (source === "tool") return;
      var group = document.createElement("optgroup");
      group.label = (data.source_labels || {})[source] || source;
      Object.keys(data.sources[source]).forEach(function (m) {
        var v = source + ":" + m;
        group.appendChild(new Option(titled(v), v, false, s.tele.indexOf(v) >= 0));
      });
      teleSelect.appendChild(group);
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

  // The telemetry panel's y axes: one per unit, in the order chosen; the
  // first on the left, the others on the right ("y2", "y3", ...).
  function unitAxes(keys) {
    var axes = [];
    keys.forEach(function (k) { if (axes.indexOf(unitOf(k)) < 0) axes.push(unitOf(k)); });
    return axes;
  }

  function draw() {
    var s = state();
    var traces = [];
    var tool = (data.sources.tool || {})[s.tool];
    var toolName = titled("tool:" + s.tool);
    if (tool && tool.low) {
      // Downsampled by retention: each minute's min..max as a band under its mean.
      traces.push({ type: "scatter", mode: "lines", x: tool.x, y: tool.high, yaxis: "y", line: { width: 0 }, showlegend: false, hoverinfo: "skip" });
      traces.push({ type: "scatter", mode: "lines", name: "minute min–max", x: tool.x, y: tool.low, yaxis: "y", line: { width: 0 }, fill: "tonexty" });
    }
    if (tool) traces.push({ type: "scatter", mode: "lines", name: tool.low ? toolName + " (minute mean)" : toolName, x: tool.x, y: tool.y, yaxis: "y" });
    var tele = s.tele.filter(function (v) {
      var i = v.indexOf(":");
      return (data.sources[v.slice(0, i)] || {})[v.slice(i + 1)];
    });
    var units = unitAxes(tele);
    tele.forEach(function (v) {
      var i = v.indexOf(":"), series = data.sources[v.slice(0, i)][v.slice(i + 1)];
      var axis = "y" + (2 + units.indexOf(unitOf(v)));
      traces.push({ type: "scatter", mode: "lines", name: titled(v), x: series.x, y: series.y, yaxis: axis });
    });
    // Only the panels with something to show: one alone takes the height.
    var top = tool ? (tele.length ? [0.55, 1] : [0, 1]) : null;
    var bottom = tele.length ? (tool ? [0, 0.45] : [0, 1]) : null;
    var right = Math.max(0, units.length - 2) * 0.07;
    var xaxis = { title: { text: "seconds" }, anchor: bottom ? "y2" : "y", domain: [0, 1 - right] };
    if (s.x0 !== null && s.x1 !== null) xaxis.range = [Number(s.x0), Number(s.x1)];
    var layout = {
      height: top && bottom ? 520 : 340, margin: { t: 30 }, xaxis: xaxis,
      legend: { orientation: "h" },
      shapes: phaseShapes(), annotations: phaseLabels(),
    };
    layout.yaxis = top ? { domain: top, title: { text: toolName } } : { visible: false, domain: [0, 0.01] };
    units.forEach(function (u, n) {
      var named = tele.filter(function (v) { return unitOf(v) === u; });
      var axis = { title: { text: named.length === 1 ? titled(named[0]) : (u || "count") }, rangemode: "tozero" };
      if (n === 0) axis.domain = bottom;
      else {
        axis.overlaying = "y2"; axis.side = "right";
        if (n > 1) { axis.anchor = "free"; axis.position = 1 - right + (n - 1) * 0.07; }
      }
      if (u === "%") axis.range = [0, 100];
      layout["yaxis" + (2 + n)] = axis;
    });
    div.dataset.panels = [top ? "tool" : "", bottom ? "telemetry" : ""].filter(Boolean).join(",");
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
