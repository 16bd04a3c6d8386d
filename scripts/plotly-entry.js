// The Plotly build served by Benchboard: only what static/js draws.
// Core brings the scatter trace (lines, markers, error bars, fill bands),
// Plotly.newPlot and Plotly.downloadImage; bar and box are the other two.
// scripts/vendor.sh bundles this file with esbuild into static/vendor/.
"use strict";

var Plotly = require("plotly.js/lib/core");

Plotly.register([require("plotly.js/lib/bar"), require("plotly.js/lib/box")]);

module.exports = Plotly;
