#!/usr/bin/env bash
# `postgres-database.sh create NAME` makes a PostgreSQL database of the local server
# (start-servers.sh) for a FerretDB of its own, with the indexes and the compare-and-set guard
# the shared one has; `postgres-database.sh drop NAME` removes it. A test that kills and starts
# its own FerretDB uses one: a starting FerretDB 1.24 reads the metadata of every database in
# its PostgreSQL database, and one that another test drops meanwhile leaves it failing every
# later command ("relation _ferretdb_database_metadata already exists", over and over).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PG_PORT="${RS_LOCAL_PG_PORT:-5433}"
bin="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)"
[ -n "$bin" ] || { echo "PostgreSQL is not installed: run deploy/local/setup.sh" >&2; exit 1; }
[[ "${2:-}" =~ ^[a-z_][a-z0-9_]{0,62}$ ]] || { echo "usage: $0 create|drop NAME (lower case, digits, _)" >&2; exit 2; }
sql() { "$bin/psql" -h 127.0.0.1 -p "$PG_PORT" -U postgres -q -v ON_ERROR_STOP=1 "$@" >/dev/null; }
case "$1" in
  create)
    sql -c "CREATE DATABASE $2"
    sql -d "$2" -f "$here/ferretdb-index-fields.sql" -f "$here/ferretdb-compare-and-set.sql" -f "$here/ferretdb-indexes.sql"
    ;;
  drop) sql -c "DROP DATABASE IF EXISTS $2 WITH (FORCE)" ;;
  *) echo "usage: $0 create|drop NAME" >&2; exit 2 ;;
esac
