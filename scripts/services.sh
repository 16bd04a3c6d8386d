#!/usr/bin/env bash
# Start PostgreSQL, Redis and MariaDB on this machine when they are down
# (the commands of this machine kind's notes). Then wait until they answer.
set -uo pipefail

up() { timeout 2 bash -c "echo > /dev/tcp/127.0.0.1/$1" 2>/dev/null; }

if ! up 5432; then
  echo "starting PostgreSQL"
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -1)" main start
fi
if ! up 6379; then
  echo "starting Redis"
  mkdir -p /var/lib/redis /var/log/redis
  redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
    --dir /var/lib/redis --logfile /var/log/redis/ci.log
fi
if ! up 3306; then
  echo "starting MariaDB"
  start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd
fi
for port in 5432 6379 3306; do
  for _ in $(seq 60); do up "$port" && break; sleep 1; done
  up "$port" || { echo "service on port $port did not come up" >&2; exit 1; }
done
