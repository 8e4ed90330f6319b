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

if listening "$MONGO_PORT"; then
  echo "a MongoDB-wire server answers on 127.0.0.1:$MONGO_PORT"
else
  command -v ferretdb >/dev/null || { echo "ferretdb is not installed: run deploy/local/setup.sh" >&2; exit 1; }
  mkdir -p "$RS_LOCAL_DATA/ferretdb"
  # --state-dir: FerretDB writes state.json there (by default into the working directory).
  setsid nohup ferretdb --handler=sqlite --sqlite-url="file:$RS_LOCAL_DATA/ferretdb/" \
    --state-dir="$RS_LOCAL_DATA/ferretdb" \
    --listen-addr="127.0.0.1:$MONGO_PORT" --debug-addr=127.0.0.1:0 --telemetry=disable \
    --log-level=warn >"$RS_LOCAL_DATA/ferretdb.log" 2>&1 < /dev/null &
  wait_for "$MONGO_PORT" FerretDB 30 "$RS_LOCAL_DATA/ferretdb.log"
  echo "started FerretDB on 127.0.0.1:$MONGO_PORT (data in $RS_LOCAL_DATA/ferretdb)"
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
