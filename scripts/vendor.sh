#!/usr/bin/env bash
# Copy npm front-end packages into static/vendor/, version in the file name.
# Plotly: the "cartesian" partial bundle (scatter, bar, box and the other 2-D
# cartesian traces: what static/js draws), 1.5 MB instead of the full 4.7 MB
# (~0.5 MB gzipped). It has no WebGL traces, hence no eval()/new Function():
# pages can run under a script-src 'self' Content-Security-Policy.
set -euo pipefail
cd "$(dirname "$0")/.."
package=plotly.js-cartesian-dist-min
version=$(node -p "require('./node_modules/${package}/package.json').version")
mkdir -p static/vendor
rm -f static/vendor/plotly-*.min.js  # an older bundle must not be collected and served
cp "node_modules/${package}/plotly-cartesian.min.js" "static/vendor/plotly-cartesian-${version}.min.js"
# A stable name for templates; the versioned file says what it is.
cp "node_modules/${package}/plotly-cartesian.min.js" static/vendor/plotly.min.js
echo "${package} ${version}" > static/vendor/PLOTLY_VERSION
