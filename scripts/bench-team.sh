#!/usr/bin/env bash
# The team's-gate benchmark of docs/performance.md, in one run on this machine: a
# throwaway PostgreSQL (Debian's, pg_stat_statements loaded), its own limit (pgbench,
# simple updates, commits/s), then the same `gatehouse bench` client against one node on
# SQLite, one node on PostgreSQL and three nodes on PostgreSQL.
# Usage: scripts/bench-team.sh [ENVELOPES]   (needs a release build: cargo build --release)
set -euo pipefail
cd "$(dirname "$0")/.."
N="${1:-20000}"
GH="$PWD/target/release/gatehouse"
BIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
D=$(mktemp -d /tmp/gatehouse-bench-pg.XXXXXX)
PORT=55439
# PostgreSQL will not run as root.
AS=()
if [ "$(id -u)" = 0 ]; then chown nobody "$D"; AS=(su nobody -s /bin/sh -c); else AS=(sh -c); fi
stop() { "${AS[@]}" "$BIN/pg_ctl -D $D/data -m fast stop" >/dev/null 2>&1 || true; rm -rf "$D"; }
trap stop EXIT
"${AS[@]}" "$BIN/initdb -D $D/data -U gatehouse --auth=trust --encoding=UTF8 --no-locale" >/dev/null
"${AS[@]}" "$BIN/pg_ctl -D $D/data -w -l $D/log -o '-p $PORT -c listen_addresses=127.0.0.1 -k $D -c shared_preload_libraries=pg_stat_statements' start" >/dev/null
psql() { "${AS[@]}" "$BIN/psql -h 127.0.0.1 -p $PORT -U gatehouse -Atq $*"; }
for db in pgbench one three; do
  psql "-d postgres -c 'CREATE DATABASE $db'"
  psql "-d $db -c 'CREATE EXTENSION pg_stat_statements'"
done
echo "== PostgreSQL's own limit on this machine: pgbench, 8 clients, simple updates, 10 s"
"${AS[@]}" "$BIN/pgbench -h 127.0.0.1 -p $PORT -U gatehouse -i -q pgbench" >/dev/null 2>&1
"${AS[@]}" "$BIN/pgbench -h 127.0.0.1 -p $PORT -U gatehouse -c 8 -j 2 -T 10 -N pgbench" 2>/dev/null | grep -E "^tps|latency average"
quiet() { grep -v -e " INFO " -e "NOTICE"; }
echo "== one node, SQLite"
"$GH" bench --envelopes "$N" --senders 10 --concurrency 64 2>&1 | quiet
echo "== one node, PostgreSQL"
"$GH" --database "postgres://gatehouse@127.0.0.1:$PORT/one" bench --envelopes "$N" --senders 10 --concurrency 64 2>&1 | quiet
echo "== three nodes, PostgreSQL"
"$GH" --database "postgres://gatehouse@127.0.0.1:$PORT/three" bench --nodes 3 --envelopes "$N" --senders 10 --concurrency 64 2>&1 | quiet
