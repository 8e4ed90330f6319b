#!/usr/bin/env bash
# Stops the local servers that start-servers.sh started.
set -uo pipefail
pkill -f "ferretdb --handler=sqlite" && echo "stopped FerretDB"
if [ -x /usr/sbin/rabbitmqctl ]; then /usr/sbin/rabbitmqctl stop >/dev/null 2>&1 && echo "stopped RabbitMQ"; fi
exit 0
