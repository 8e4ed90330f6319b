#!/usr/bin/env bash
# A three-node RabbitMQ cluster on this machine, from the Debian package, beside the local
# broker (which it leaves alone): nodes rs-c1..3@localhost, AMQP on 127.0.0.1:5691-5693,
# management on 15691-15693, guest allowed from anywhere. For the cluster tests
# (libs/messaging/test/cluster.e2e.spec.ts); idempotent.
#   rabbit-cluster.sh start         start the three nodes and join them (no-op when running)
#   rabbit-cluster.sh stop-node N   stop node N's broker (its Erlang node stays: stop_app)
#   rabbit-cluster.sh start-node N  start it again
#   rabbit-cluster.sh stop          stop the three nodes and forget the cluster
set -euo pipefail
BASE="${RS_RABBIT_CLUSTER_DATA:-/var/tmp/rs-rabbit-cluster}"
NODES=(1 2 3)
node() { echo "rs-c$1@localhost"; }
as_rabbitmq() {
  if [ "$(id -u)" -eq 0 ]; then
    (cd /var/lib/rabbitmq && su rabbitmq -s /bin/sh -c "HOME=/var/lib/rabbitmq $*")
  else
    (cd /var/lib/rabbitmq && HOME=/var/lib/rabbitmq sh -c "$*")
  fi
}
ctl() { as_rabbitmq /usr/lib/rabbitmq/bin/rabbitmqctl "$@"; }
listening() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

start_node() {
  local i=$1 dir="$BASE/n$1"
  listening $((5690 + i)) && return 0
  if ctl -q -n "$(node "$i")" status >/dev/null 2>&1; then
    ctl -q -n "$(node "$i")" start_app
    return 0
  fi
  mkdir -p "$dir/log" "$dir/mnesia"
  cat >"$dir/rabbitmq.conf" <<CONF
listeners.tcp.default = 127.0.0.1:$((5690 + i))
management.tcp.port = $((15690 + i))
management.tcp.ip = 127.0.0.1
loopback_users = none
CONF
  [ "$(id -u)" -ne 0 ] || chown -R rabbitmq: "$BASE"
  as_rabbitmq "RABBITMQ_NODENAME=$(node "$i") RABBITMQ_DIST_PORT=$((25690 + i)) RABBITMQ_MNESIA_BASE=$dir/mnesia \
    RABBITMQ_LOG_BASE=$dir/log RABBITMQ_CONFIG_FILE=$dir/rabbitmq.conf RABBITMQ_PID_FILE=$dir/pid \
    setsid nohup /usr/lib/rabbitmq/bin/rabbitmq-server >$dir/out.log 2>&1 </dev/null &"
}

wait_for_node() {
  local i=$1
  for _ in $(seq 1 120); do
    listening $((5690 + i)) && ctl -q -n "$(node "$i")" await_startup --timeout 30 >/dev/null 2>&1 && return 0
    sleep 0.5
  done
  echo "RabbitMQ node $(node "$i") did not start: $BASE/n$i/out.log" >&2
  tail -n 20 "$BASE/n$i/out.log" >&2 || true
  exit 1
}

case "${1:-}" in
  start)
    [ -x /usr/lib/rabbitmq/bin/rabbitmq-server ] || { echo "rabbitmq-server is not installed: run deploy/local/setup.sh" >&2; exit 1; }
    for i in "${NODES[@]}"; do start_node "$i"; done
    for i in "${NODES[@]}"; do wait_for_node "$i"; done
    for i in 2 3; do
      if ! ctl -q -n "$(node 1)" cluster_status --formatter json | grep -q "\"$(node "$i")\""; then
        # (The CLI reports the node's feature flags on stderr as it joins: noise, not failure.)
        ctl -q -n "$(node "$i")" stop_app >/dev/null 2>&1
        ctl -q -n "$(node "$i")" reset >/dev/null 2>&1
        ctl -q -n "$(node "$i")" join_cluster "$(node 1)" >/dev/null 2>&1
        ctl -q -n "$(node "$i")" start_app >/dev/null 2>&1
      fi
    done
    echo "RabbitMQ cluster: amqp://guest:guest@127.0.0.1:5691,5692,5693 (management 15691-15693)"
    ;;
  stop-node) ctl -q -n "$(node "$2")" stop_app ;;
  start-node) ctl -q -n "$(node "$2")" start_app && wait_for_node "$2" ;;
  stop)
    for i in "${NODES[@]}"; do ctl -q -n "$(node "$i")" stop >/dev/null 2>&1 || true; done
    rm -rf "$BASE"
    ;;
  *) echo "usage: $0 start | stop-node N | start-node N | stop" >&2; exit 2 ;;
esac
