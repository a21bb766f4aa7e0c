#!/usr/bin/env bash
# The team's-gate benchmark of docs/performance.md, in one run on this machine: a
# throwaway PostgreSQL (Debian's, pg_stat_statements loaded), its own limit (pgbench,
# simple updates, commits/s), then the same `gatehouse bench` client against one node on
# SQLite, one node on PostgreSQL and three nodes on PostgreSQL.
# The three are run in turn, ROUNDS times (one round is noisy on a shared 2-core machine),
# and the medians compared at the end.
# Usage: scripts/bench-team.sh [ENVELOPES] [ROUNDS]   (needs a release build: cargo build --release)
set -euo pipefail
cd "$(dirname "$0")/.."
N="${1:-20000}"
ROUNDS="${2:-3}"
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
database() {
  psql "-d postgres -c 'CREATE DATABASE $1'"
  psql "-d $1 -c 'CREATE EXTENSION pg_stat_statements'"
}
database pgbench
echo "== PostgreSQL's own limit on this machine: pgbench, 8 clients, simple updates, 10 s"
"${AS[@]}" "$BIN/pgbench -h 127.0.0.1 -p $PORT -U gatehouse -i -q pgbench" >/dev/null 2>&1
"${AS[@]}" "$BIN/pgbench -h 127.0.0.1 -p $PORT -U gatehouse -c 8 -j 2 -T 10 -N pgbench" 2>/dev/null | grep -E "^tps|latency average"
# A running gate's PostgreSQL has WAL files to recycle; a fresh cluster creates each 16 MB
# file, zero-filled and synced, the first time it fills one (at this load every ~1.5 s,
# each a 40-90 ms stall of every commit, measured). Some WAL is written and checkpointed
# so that the runs write into recycled files, as a running server's do.
psql "-d pgbench -c 'CREATE TABLE wal_filler AS SELECT g, repeat(chr(120), 200) AS x FROM generate_series(1, 400000) g' -c 'DROP TABLE wal_filler' -c CHECKPOINT"
# Between runs: the last run's tables vacuumed (or autovacuum does it during the next run,
# which would pay for it) and a checkpoint, so that no run pays for an earlier one's.
settle() { [ -z "${1:-}" ] || psql "-d $1 -c 'VACUUM (ANALYZE)'"; psql "-d postgres -c CHECKPOINT"; }
quiet() { grep -v -e " INFO " -e "NOTICE"; }
OUT="$D/results"
: > "$OUT"
# Runs one configuration, shows its report, and keeps "name accepted/s p99-ms".
run() {
  local name="$1"; shift
  echo "== $name (round $r of $ROUNDS)"
  "$GH" "$@" 2>&1 | quiet | tee "$D/last"
  sed -n 's/^inbox http: .* = \([0-9]*\) accepted\/s; p50 [0-9.]* ms, p99 \([0-9.]*\) ms.*/\1 \2/p' "$D/last" | sed "s/^/$name /" >> "$OUT"
}
# Each run starts with a warm-up of its own (not counted, shown apart): the first requests
# to a node that has just started open its connections and prepare its statements.
W=$((N / 10))
for r in $(seq 1 "$ROUNDS"); do
  run sqlite bench --envelopes "$N" --warm-up "$W" --senders 10 --concurrency 64
  database "one$r"
  settle
  run pg1 --database "postgres://gatehouse@127.0.0.1:$PORT/one$r" bench --envelopes "$N" --warm-up "$W" --senders 10 --concurrency 64
  database "three$r"
  settle "one$r"
  run pg3 --database "postgres://gatehouse@127.0.0.1:$PORT/three$r" bench --nodes 3 --envelopes "$N" --warm-up "$W" --senders 10 --concurrency 64
  settle "three$r"
done
median() { grep "^$1 " "$OUT" | awk '{print $'"$2"'}' | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
S=$(median sqlite 2); P1=$(median pg1 2); P3=$(median pg3 2)
echo "== medians of $ROUNDS rounds, $N envelopes each"
echo "one node, SQLite:       $S accepted/s, p99 $(median sqlite 3) ms"
echo "one node, PostgreSQL:   $P1 accepted/s, p99 $(median pg1 3) ms = $((100 * P1 / S))% of SQLite"
echo "three nodes, PostgreSQL: $P3 accepted/s, p99 $(median pg3 3) ms = $((100 * P3 / S))% of SQLite"
# Each round's three ran back to back: their ratios see the same moment of a shared machine.
ratios() { paste <(grep "^sqlite " "$OUT" | awk '{print $2}') <(grep "^$1 " "$OUT" | awk '{print $2}') | awk '{printf "%d\n", 100 * $2 / $1}' | sort -n; }
mid() { awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
echo "per round, of that round's SQLite: one PostgreSQL node $(ratios pg1 | tr '\n' ' ')(median $(ratios pg1 | mid)%), three $(ratios pg3 | tr '\n' ' ')(median $(ratios pg3 | mid)%)"
echo "every round (configuration, accepted/s, p99 ms):"
cat "$OUT"
