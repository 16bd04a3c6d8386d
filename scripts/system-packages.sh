#!/usr/bin/env bash
# Install the Debian packages the tests drive (as root), only when missing.
# --tools: only the benchmark tools `make run` needs; when not root, say how
# to install them (one line) and go on.
set -euo pipefail
# The benchmark tools and the sandbox they run in (bubblewrap, docs/sandbox.md):
# the list generated from the tool registry (`python -m runners packages --debian`).
TOOLS="$(grep -v '^#' "$(dirname "$0")/debian-packages.txt" | tr '\n' ' ')"
# postgresql: the tests start private servers as benchmark targets; haproxy: the
# balancer the S4 test puts in front of two private MariaDB servers; mariadb-server
# and redis-server: the private database servers the tests start; iproute2: the
# network namespaces and the shaped veth link of the network-bound test.
PACKAGES="$TOOLS postgresql mariadb-server redis-server iproute2 openssh-server haproxy chromium chromium-driver procps"
tools_only=""
if [ "${1:-}" = "--tools" ]; then tools_only=1; PACKAGES="$TOOLS"; fi
missing=""
for p in $PACKAGES; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -z "$missing" ]; then exit 0; fi
if [ "$(id -u)" != 0 ]; then
  if [ -n "$tools_only" ]; then
    echo "benchmark tools missing:$missing; install them with: sudo scripts/system-packages.sh --tools"
    exit 0
  fi
  echo "missing Debian packages:$missing (run as root or install them)" >&2; exit 1
fi
echo "installing Debian packages:$missing"
apt-get update -qq >/dev/null
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null
