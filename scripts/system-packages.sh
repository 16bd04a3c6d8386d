#!/usr/bin/env bash
# Install the Debian packages the tests drive (as root), only when missing.
set -euo pipefail
PACKAGES="sysbench fio stress-ng mariadb-client postgresql-client openssh-server chromium chromium-driver procps"
missing=""
for p in $PACKAGES; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -z "$missing" ]; then exit 0; fi
if [ "$(id -u)" != 0 ]; then
  echo "missing Debian packages:$missing (run as root or install them)" >&2; exit 1
fi
echo "installing Debian packages:$missing"
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null
