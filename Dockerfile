FROM python:3.11-slim-bookworm
RUN apt-get update && apt-get install -y --no-install-recommends sysbench fio stress-ng bubblewrap mariadb-client postgresql-client nodejs npm make && rm -rf /var/lib/apt/lists/*
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
