#!/bin/sh
# The forensic story on a bundled damaged sample: `make demo` runs this (usage: demo/run.sh BIN_DIR OUT_DIR).
# Each step checks its exit code, so a demo that no longer tells the truth fails.
set -u
BIN=${1:-.venv/bin}
OUT=${2:-.demo}
LOGS=$OUT/logs
step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
expect() { want=$1; shift; "$@"; rc=$?; [ "$rc" -eq "$want" ] || { echo "demo: '$*' exited $rc, expected $want" >&2; exit 1; }; }

rm -rf "$OUT" && mkdir -p "$OUT" || exit 2
step "1. The broker will not start. Its log dir (a copy of the sample, damaged as a crash leaves it): $LOGS"
"$BIN/python" -m kafkaforensics.harness.damaged_sample "$LOGS" || exit 1

step "2. kfx verify: the storage damage, located (exit 1)"
expect 1 "$BIN/kfx" verify "$LOGS"

step "3. kfx analyze: also what is wrong in the data, each finding with its remedy; the HTML report (exit 1)"
expect 1 "$BIN/kfx" analyze "$LOGS" --html "$OUT/report.html"

step "4. kfx recover --dry-run: what Kafka's log loading would do to the damaged partitions (nothing changes)"
expect 1 "$BIN/kfx" recover --dry-run "$LOGS/orders-0"
expect 1 "$BIN/kfx" recover --dry-run "$LOGS/clients-0"

step "5. kfx recover: do it, originals kept in $OUT/backup"
for p in "$LOGS"/*-0; do
  "$BIN/kfx" recover --backup-dir "$OUT/backup/$(basename "$p")" "$p" >/dev/null
  rc=$?; [ "$rc" -le 1 ] || exit 1
  echo "recovered $p (backup: $OUT/backup/$(basename "$p"))"
done
"$BIN/kfx" recover --dry-run "$LOGS/orders-0"

step "6. kfx verify: clean (exit 0)"
expect 0 "$BIN/kfx" verify "$LOGS"

step "7. What recovery cannot repair: the hanging transaction and the sequence gap are in the data itself"
"$BIN/kfx" analyze "$LOGS/payments-0" | grep -A1 -E "hanging-transaction|sequence-gap"
echo "-> abort the transaction through the cluster with the kafka-transactions.sh command above; the gap is evidence."

step "8. kfx serve: the repaired orders-0 replayed to a real client (kafka-python)"
PORT=$("$BIN/python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$BIN/kfx" serve "$LOGS" --host 127.0.0.1 --port "$PORT" --state-file "$OUT/serve-state.json" 2>"$OUT/serve.log" &
SERVER=$!
"$BIN/python" "$(dirname "$0")/consume.py" "127.0.0.1:$PORT" orders 5
rc=$?
kill "$SERVER" 2>/dev/null; wait "$SERVER" 2>/dev/null
[ "$rc" -eq 0 ] || { echo "demo: the consumer read nothing (server log: $OUT/serve.log)" >&2; exit 1; }

step "The report: $(cd "$OUT" && pwd)/report.html"
