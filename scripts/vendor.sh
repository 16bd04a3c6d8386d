#!/usr/bin/env bash
# Copy npm front-end packages into static/vendor/, version in the file name.
# Plotly is its "strict" bundle: no eval()/new Function() (WebGL shaders are
# precompiled), so pages run under script-src 'self' (docs/operations.md).
set -euo pipefail
cd "$(dirname "$0")/.."
package=node_modules/plotly.js-strict-dist-min
version=$(node -p "require('./${package}/package.json').version")
mkdir -p static/vendor
cp "${package}/plotly-strict.min.js" "static/vendor/plotly-${version}.min.js"
# A stable name for templates; the versioned file says what it is.
cp "${package}/plotly-strict.min.js" static/vendor/plotly.min.js
echo "$version" > static/vendor/PLOTLY_VERSION
