#!/usr/bin/env bash
# Build static/vendor/ from the npm packages (never a CDN), version in the file name.
# Plotly: our own build of the plotly.js source (scripts/plotly-entry.js: the core
# with scatter, plus bar and box: what static/js draws), bundled by esbuild as
# plotly.js's own build does. 1.2 MB (~0.4 MB gzipped) instead of 1.5 MB for the
# "cartesian" partial bundle, and less script for the browser to run before a
# chart appears. No WebGL traces, hence no eval()/new Function(): pages can run
# under a script-src 'self' Content-Security-Policy.
set -euo pipefail
cd "$(dirname "$0")/.."
version=$(node -p "require('./node_modules/plotly.js/package.json').version")
mkdir -p static/vendor
rm -f static/vendor/plotly-*.min.js  # an older bundle must not be collected and served
bundle="static/vendor/plotly-benchboard-${version}.min.js"
# The options of plotly.js's esbuild-config.js, minus the plugins only its WebGL
# and map traces need; the map's stylesheet (required by the registry only when a
# map trace is registered, never here) is left out.
node_modules/.bin/esbuild scripts/plotly-entry.js --bundle --minify \
    --format=iife --global-name=Plotly --target=es2016 \
    --define:global=window --define:define.amd=false --loader:.css=empty \
    --legal-comments=none --log-level=warning --outfile="${bundle}"
if grep -q -e 'new Function' -e 'eval(' "${bundle}"; then
    echo "vendor.sh: ${bundle} compiles code at run time (CSP script-src 'self' forbids it)" >&2
    exit 1
fi
# A stable name for templates; the versioned file says what it is.
cp "${bundle}" static/vendor/plotly.min.js
echo "plotly.js ${version} (scatter, bar, box: scripts/plotly-entry.js)" > static/vendor/PLOTLY_VERSION
# Flame graphs: d3-flame-graph and its d3 modules, one IIFE (scripts/flamegraph-entry.js)
# exposing window.benchFlame; its stylesheet copied beside it.
flame=$(node -p "require('./node_modules/d3-flame-graph/package.json').version")
rm -f static/vendor/d3-flamegraph-*.min.js
node_modules/.bin/esbuild scripts/flamegraph-entry.js --bundle --minify --format=iife \
    --target=es2016 --legal-comments=none --log-level=warning \
    --outfile="static/vendor/d3-flamegraph-${flame}.min.js"
cp "static/vendor/d3-flamegraph-${flame}.min.js" static/vendor/d3-flamegraph.min.js
cp node_modules/d3-flame-graph/dist/d3-flamegraph.css static/vendor/d3-flamegraph.css
echo "d3-flame-graph ${flame} (scripts/flamegraph-entry.js)" > static/vendor/FLAMEGRAPH_VERSION
