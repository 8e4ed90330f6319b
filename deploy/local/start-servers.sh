#!/usr/bin/env bash
# Starts the local RabbitMQ and FerretDB when nothing answers on their ports yet (idempotent).
# Exits non-zero with a message when a server cannot be started.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"

MONGO_PORT="${RS_LOCAL_MONGO_PORT:-27017}"
AMQP_PORT="${RS_LOCAL_AMQP_PORT:-5672}"
listening() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
wait_for() { # $1 port, $2 name, $3 seconds, $4 log
  for _ in $(seq 1 "$3"); do listening "$1" && return 0; sleep 1; done
  echo "$2 did not start listening on port $1 within $3 s; see $4" >&2
  tail -n 20 "$4" >&2 || true
  return 1
}
mkdir -p "$RS_LOCAL_DATA"

# FerretDB stores its data in PostgreSQL: with its SQLite backend every update by `_id`
# scanned the whole collection (docs/decisions/0010-ferretdb-on-postgresql.md).
PG_PORT="${RS_LOCAL_PG_PORT:-5433}" # not 5432: leaves a system PostgreSQL alone
PG_DATA="$RS_LOCAL_DATA/postgres"
pg_bin() { ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1; }
as_postgres() { if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }

start_postgres() {
  local bin
  bin="$(pg_bin)"
  [ -n "$bin" ] || { echo "PostgreSQL is not installed: run deploy/local/setup.sh" >&2; exit 1; }
  if [ "$(id -u)" -eq 0 ] && ! runuser -u postgres -- test -x "$RS_LOCAL_DATA"; then
    # PostgreSQL refuses to run as root, and its user cannot reach a private checkout.
    PG_DATA="/var/tmp/rs-local-postgres-$(printf %s "$RS_ROOT" | cksum | cut -d' ' -f1)"
  fi
  if [ ! -f "$PG_DATA/PG_VERSION" ]; then
    mkdir -p "$PG_DATA"
    [ "$(id -u)" -ne 0 ] || chown postgres: "$PG_DATA"
    chmod 700 "$PG_DATA"
    as_postgres "$bin/initdb" -D "$PG_DATA" -U postgres --auth=trust -E UTF8 --no-instructions \
      >"$RS_LOCAL_DATA/postgres-init.log" 2>&1 || { cat "$RS_LOCAL_DATA/postgres-init.log" >&2; exit 1; }
  fi
  if ! listening "$PG_PORT"; then
    # synchronous_commit=off: a local test server need not wait for each commit's fsync
    # (a crash may lose the last moment of writes, never consistency). plan_cache_mode: see
    # the end of ferretdb-indexes.sql (a generic plan never uses an index FerretDB's queries need).
    # pg_stat_statements (where installed): the benchmarks count the statements an operation
    # costs (bench/statements.mjs, docs/performance.md).
    local statements=""
    [ ! -f "$bin/../lib/pg_stat_statements.so" ] || statements="-c shared_preload_libraries=pg_stat_statements"
    (cd / && as_postgres "$bin/pg_ctl" -D "$PG_DATA" -l "$PG_DATA/server.log" -w -t 60 -o \
      "-p $PG_PORT -k $PG_DATA -c listen_addresses=127.0.0.1 -c synchronous_commit=off -c max_connections=450 -c plan_cache_mode=force_custom_plan $statements" \
      start >/dev/null) ||
      { tail -n 20 "$PG_DATA/server.log" >&2; exit 1; }
  fi
  if ! "$bin/psql" -h 127.0.0.1 -p "$PG_PORT" -U postgres -tAc "SELECT 1 FROM pg_database WHERE datname = 'ferretdb'" | grep -q 1; then
    "$bin/psql" -h 127.0.0.1 -p "$PG_PORT" -U postgres -qc "CREATE DATABASE ferretdb" >/dev/null
  fi
  if "$bin/psql" -h 127.0.0.1 -p "$PG_PORT" -U postgres -tAc "SHOW shared_preload_libraries" | grep -q pg_stat_statements; then
    "$bin/psql" -h 127.0.0.1 -p "$PG_PORT" -U postgres -d ferretdb -qc "CREATE EXTENSION IF NOT EXISTS pg_stat_statements" >/dev/null
  fi
  apply_indexes "$bin"
}

# The GIN indexes of ferretdb-indexes.sql on the fields ferretdb-index-fields.sql names, and
# the compare-and-set guard of ferretdb-compare-and-set.sql (idempotent, fast): also applied to
# a running server, so that a checkout that adds one gets it without a restart.
apply_indexes() {
  local here
  here="$(dirname "${BASH_SOURCE[0]}")"
  "$1/psql" -h 127.0.0.1 -p "$PG_PORT" -U postgres -d ferretdb -q -v ON_ERROR_STOP=1 \
    -f "$here/ferretdb-index-fields.sql" -f "$here/ferretdb-compare-and-set.sql" -f "$here/ferretdb-indexes.sql" >/dev/null
}

# A FerretDB of ours whose PostgreSQL is gone (its data folder was in a clone since deleted)
# answers on its port and fails every command: it is stopped, and both start again below.
if listening "$MONGO_PORT" && ! listening "$PG_PORT" && pgrep -f "ferretdb --handler=postgresql" >/dev/null; then
  echo "FerretDB answers but its PostgreSQL on 127.0.0.1:$PG_PORT does not: starting both again"
  pkill -f "ferretdb --handler=postgresql" || true
  for _ in $(seq 1 30); do listening "$MONGO_PORT" || break; sleep 1; done
fi

if listening "$MONGO_PORT"; then
  echo "a MongoDB-wire server answers on 127.0.0.1:$MONGO_PORT"
  if listening "$PG_PORT" && [ -n "$(pg_bin)" ]; then apply_indexes "$(pg_bin)" 2>/dev/null || true; fi
else
  command -v ferretdb >/dev/null || { echo "ferretdb is not installed: run deploy/local/setup.sh" >&2; exit 1; }
  start_postgres
  mkdir -p "$RS_LOCAL_DATA/ferretdb"
  # --state-dir: FerretDB writes state.json there (by default into the working directory).
  # pool_max_conns: an update holds one pooled connection for its read while it takes another
  # for its write, so more concurrent updates than connections deadlock FerretDB for good
  # (default 50); 400 is far above what the services and tests run at once.
  # GOGC: FerretDB's garbage collector was about 40 % of its CPU under load; collecting when
  # the heap has grown 4 times instead of 1 makes it a fraction of that for about 120 MB
  # (docs/decisions/0067; RS_FERRETDB_GOGC to set another).
  (cd / && GOGC="${RS_FERRETDB_GOGC:-400}" setsid nohup ferretdb --handler=postgresql \
    --postgresql-url="postgres://postgres@127.0.0.1:$PG_PORT/ferretdb?pool_max_conns=400" \
    --state-dir="$RS_LOCAL_DATA/ferretdb" \
    --listen-addr="127.0.0.1:$MONGO_PORT" --debug-addr=127.0.0.1:0 --telemetry=disable \
    --log-level=warn >"$RS_LOCAL_DATA/ferretdb.log" 2>&1 < /dev/null &)
  wait_for "$MONGO_PORT" FerretDB 30 "$RS_LOCAL_DATA/ferretdb.log"
  echo "started FerretDB on 127.0.0.1:$MONGO_PORT (PostgreSQL on 127.0.0.1:$PG_PORT, data in $PG_DATA)"
fi

if listening "$AMQP_PORT"; then
  echo "an AMQP server answers on 127.0.0.1:$AMQP_PORT"
else
  [ -x /usr/sbin/rabbitmq-server ] || { echo "rabbitmq-server is not installed: run deploy/local/setup.sh" >&2; exit 1; }
  (cd / && setsid nohup /usr/sbin/rabbitmq-server >"$RS_LOCAL_DATA/rabbitmq.log" 2>&1 < /dev/null &)
  wait_for "$AMQP_PORT" RabbitMQ 90 "$RS_LOCAL_DATA/rabbitmq.log"
  /usr/sbin/rabbitmqctl await_startup --timeout 60 >/dev/null
  echo "started RabbitMQ on 127.0.0.1:$AMQP_PORT (management on 15672)"
fi
