#!/usr/bin/env bash
# Copy npm front-end packages into static/vendor/, version in the file name.
set -euo pipefail
cd "$(dirname "$0")/.."
version=$(node -p "require('./node_modules/plotly.js-dist-min/package.json').version")
mkdir -p static/vendor
cp node_modules/plotly.js-dist-min/plotly.min.js "static/vendor/plotly-${version}.min.js"
# A stable name for templates; the versioned file says what it is.
cp node_modules/plotly.js-dist-min/plotly.min.js static/vendor/plotly.min.js
echo "$version" > static/vendor/PLOTLY_VERSION
