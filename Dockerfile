FROM python:3.11-slim-bookworm
RUN apt-get update && apt-get install -y --no-install-recommends sysbench fio stress-ng mariadb-client postgresql-client nodejs npm make && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY . .
RUN pip install --no-cache-dir -e . && npm install --no-audit --no-fund && scripts/vendor.sh
