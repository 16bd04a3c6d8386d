FROM python:3.11-slim-bookworm
# The benchmark tools and the sandbox: the list generated from the tool registry.
COPY scripts/debian-packages.txt /tmp/debian-packages.txt
RUN apt-get update && grep -v '^#' /tmp/debian-packages.txt | xargs apt-get install -y --no-install-recommends nodejs npm make && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY . .
RUN pip install --no-cache-dir -e . && npm install --no-audit --no-fund && scripts/vendor.sh
# Web, worker and beat run as an unprivileged system user (uid 10001); the var
# volume is created here owned by it, so a fresh named volume inherits that.
RUN groupadd --system --gid 10001 benchboard \
    && useradd --system --uid 10001 --gid benchboard --home-dir /var/lib/benchboard --shell /usr/sbin/nologin benchboard \
    && mkdir -p /var/lib/benchboard \
    && chown -R benchboard:benchboard /var/lib/benchboard
USER benchboard:benchboard
