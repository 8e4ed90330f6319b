#!/usr/bin/env bash
# Stops the local servers that start-servers.sh started.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
as_postgres() { if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }

pkill -f "ferretdb --handler=" && echo "stopped FerretDB"
for data in "$RS_LOCAL_DATA/postgres" /var/tmp/rs-local-postgres-*; do
  [ -f "$data/postmaster.pid" ] || continue
  bin="$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)"
  as_postgres "$bin/pg_ctl" -D "$data" -m fast stop >/dev/null && echo "stopped PostgreSQL ($data)"
done
if [ -x /usr/sbin/rabbitmqctl ]; then /usr/sbin/rabbitmqctl stop >/dev/null 2>&1 && echo "stopped RabbitMQ"; fi
exit 0
