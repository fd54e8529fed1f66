#!/usr/bin/env bash
# Cluster benchmark: raftmq against NATS JetStream on this machine, in one run.
#
# Starts `raftmq namesrv` and three `raftmq broker` processes (one group,
# SYNC_FLUSH, data in a temp dir, free loopback ports), runs the workloads of
# ../shared/bench/peer-nats.sh with `raftmq bench`, stops the cluster, runs
# peer-nats.sh always (3 servers, R3, file storage, fsync before every ack)
# and prints ours, theirs and the ratio per workload.
#
#   usage: scripts/bench.sh            (from the repo root; make bench runs it)
#
# Environment:
#   RAFTMQ   the binary (default bin/raftmq; make bench builds it)
#   MSGS     async produce count and consume backlog (default 200000, as the peer)
#   INFLIGHT async sends outstanding per client (default 512: natscli's async
#            publisher keeps about as many unacknowledged per client — its
#            throughput × latency here is ~470 per client)
#   SYNC_MSGS  sync produce count (default 20000, as the peer)
#   OUT      where logs, CSV and profiles go (default a new /tmp/raftmq-bench.* dir)
#   PEER     path of peer-nats.sh (default ../shared/bench/peer-nats.sh); PEER=none skips it
#   PROFILE=1  also run 15 s of async and of sync produce with CPU, block and
#              mutex profiles of every broker, into $OUT (see docs/BENCHMARKS.md)
#   SCALING=1  also produce (async, 4 clients, SCALING_MSGS, default 300000,
#              after a warm-up of SCALING_WARM, default 100000) to 8 queues,
#              1000 queues and 10,000 queues (10 topics of 1000)
#   DEDUPE=0   skip the dedupe window pair (async and sync produce on fresh
#              groups with --dedupe-window on and 0); DEDUPE_ROUNDS=N (default
#              3) alternates the pair N times and reports the medians
#   SECURE=0   skip the ACL+TLS pair (async and sync produce on fresh groups
#              with ACL 1.0 and TLS on every port, raft included, against
#              plain ones); SECURE_ROUNDS=N (default 2) alternates it N times
#   SCALE_GROUPS="1 2 3"  the broker-group counts of the scale-out runs (async
#              produce and a consume of it, 8 queues per group, in one
#              `raftmq dev --groups N` process); SCALE_GROUPS= skips them
#   BACKLOG=N  also produce N messages, then consume them from the first
#              offset (2 consumers) while 2 producers write TAIL_RATE
#              (default 5000) msg/s to another topic
set -euo pipefail
RAFTMQ=${RAFTMQ:-bin/raftmq}
MSGS=${MSGS:-200000}
SYNC_MSGS=${SYNC_MSGS:-20000}
PEER=${PEER:-../shared/bench/peer-nats.sh}
OUT=${OUT:-$(mktemp -d /tmp/raftmq-bench.XXXXXX)}
mkdir -p "$OUT"
DATA=$(mktemp -d /tmp/raftmq-bench-data.XXXXXX)
PIDS=()

RUN_DIR=
# stop_cluster stops the run's processes and deletes its data (the disk
# is shared; a dozen groups' logs would fill it).
stop_cluster() {
  local p
  for p in "${PIDS[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]:-}"; do [ -n "$p" ] && wait "$p" 2>/dev/null || true; done
  PIDS=()
  if [ -n "$RUN_DIR" ]; then rm -rf "$RUN_DIR"; RUN_DIR=; fi
}
cleanup() { stop_cluster; rm -rf "$DATA"; }
trap cleanup EXIT
trap 'exit 130' INT TERM

read -r NS B1 B2 B3 R1 R2 R3 P1 P2 P3 <<<"$("$RAFTMQ" bench ports 10)"
NSADDR=127.0.0.1:$NS
PEERS="n1/127.0.0.1:$R1/127.0.0.1:$B1,n2/127.0.0.1:$R2/127.0.0.1:$B2,n3/127.0.0.1:$R3/127.0.0.1:$B3"
PROF=()
[ "${PROFILE:-0}" = 1 ] && PROF=(--block-profile-rate 10000 --mutex-profile-fraction 10)

# start_cluster RUN [BROKER ARGS...]: namesrv + 3 brokers on the bench
# ports, data in $DATA/RUN (a fresh group each run).
NS_EXTRA=()
BENCH_EXTRA=()
start_cluster() {
  local run=$1 i=0 b pp; shift
  RUN_DIR=$DATA/$run
  "$RAFTMQ" namesrv --listen "$NSADDR" --log-level warn "${NS_EXTRA[@]}" > "$OUT/namesrv.$run.log" 2>&1 &
  PIDS+=($!)
  for b in "$B1" "$B2" "$B3"; do
    i=$((i + 1)); pp=$(eval echo "\$P$i")
    "$RAFTMQ" broker --node-id "n$i" --peers "$PEERS" --listen "127.0.0.1:$b" --data "$DATA/$run/n$i" \
      --namesrv "$NSADDR" --flush SYNC_FLUSH --log-level warn --http "127.0.0.1:$pp" "${PROF[@]}" "$@" \
      > "$OUT/broker-n$i.$run.log" 2>&1 &
    PIDS+=($!)
  done
}
start_cluster main

bench() { "$RAFTMQ" bench "$@" --namesrv "$NSADDR" --size 1024 --csv "$OUT/raftmq.csv" --no-progress "${BENCH_EXTRA[@]}" | tee -a "$OUT/raftmq.log"; }

echo "== raftmq: namesrv + 3 brokers (SYNC_FLUSH) on loopback, data in $DATA, output in $OUT"
echo "== $(date -u +%FT%TZ) commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
# The first workload creates its topic, retrying while the group elects.
bench produce --topic bench-async --queues 8 --mode async --clients 4 --inflight "${INFLIGHT:-512}" --msgs "$MSGS"
bench produce --topic bench-sync --queues 8 --mode sync --clients 16 --msgs "$SYNC_MSGS"
bench consume --topic bench-async --clients 1 --msgs "$MSGS"
# Transactions against plain sync sends (the same 16 clients): each
# message a half message, then its commit.
bench produce --topic bench-txn --queues 8 --mode txn --clients 16 --msgs "$SYNC_MSGS" | tee "$OUT/txn.log"
# SQL92 pulls: a labelled backlog (property n = k mod 10, tag t<k mod 4>)
# read unfiltered, then by fresh groups under conditions selecting 1/2,
# 1/10 and 1/20 (the last pins TAGS, so the consumequeue's tag hashes skip
# most messages before their properties are read).
SQLN=$((MSGS / 20 * 20))
bench produce --topic bench-sql --queues 8 --props --mode async --clients 4 --inflight "${INFLIGHT:-512}" --msgs "$SQLN" > /dev/null
bench consume --topic bench-sql --clients 1 --msgs "$SQLN" | tee "$OUT/sql.log"
bench consume --topic bench-sql --clients 1 --sql92 "n < 5" --msgs $((SQLN / 2)) | tee -a "$OUT/sql.log"
bench consume --topic bench-sql --clients 1 --sql92 "n = 0" --msgs $((SQLN / 10)) | tee -a "$OUT/sql.log"
bench consume --topic bench-sql --clients 1 --sql92 "TAGS = 't0' AND n = 0" --msgs $((SQLN / 20)) | tee -a "$OUT/sql.log"

# profile NAME ARGS...: a 15 s `raftmq bench produce ARGS` with a CPU profile of
# every broker, then their block and mutex profiles (cumulative since start).
profile() {
  local name=$1 i pp; shift
  echo "== profiling: $name for 15 s, CPU profiles of every broker"
  CURLS=()
  for i in 1 2 3; do
    pp=$(eval echo "\$P$i")
    curl -s -o "$OUT/n$i.$name.cpu.pprof" "http://127.0.0.1:$pp/debug/pprof/profile?seconds=15" &
    CURLS+=($!)
  done
  bench produce "$@" --duration 15s --cpuprofile "$OUT/client.$name.cpu.pprof"
  wait "${CURLS[@]}"
  for i in 1 2 3; do
    pp=$(eval echo "\$P$i")
    curl -s -o "$OUT/n$i.$name.block.pprof" "http://127.0.0.1:$pp/debug/pprof/block"
    curl -s -o "$OUT/n$i.$name.mutex.pprof" "http://127.0.0.1:$pp/debug/pprof/mutex"
  done
}
if [ "${PROFILE:-0}" = 1 ]; then
  profile async --topic bench-async --mode async --clients 4
  profile sync --topic bench-sync --mode sync --clients 16
  echo "== profiles in $OUT (go tool pprof -top $RAFTMQ $OUT/n1.sync.cpu.pprof)"
fi

if [ "${SCALING:-0}" = 1 ]; then
  # A group holds at most 1024 queues per topic: 10,000 queues are 10 topics
  # of 1000. A first pass creates every queue's files on all three nodes
  # (SCALING_WARM messages); the second (SCALING_MSGS) is the steady state.
  for spec in 8:1 1000:1 1000:10; do
    q=${spec%:*}; t=${spec#*:}
    echo "== scaling: $((q * t)) queues, warm-up"
    bench produce --topic "bench-q$q-t$t" --queues "$q" --topics "$t" --mode async --clients 4 --inflight "${INFLIGHT:-512}" --msgs "${SCALING_WARM:-100000}" > /dev/null
    echo "== scaling: $((q * t)) queues"
    bench produce --topic "bench-q$q-t$t" --topics "$t" --mode async --clients 4 --inflight "${INFLIGHT:-512}" --msgs "${SCALING_MSGS:-300000}"
  done
fi

if [ -n "${BACKLOG:-}" ]; then
  # Consume a backlog of BACKLOG messages (far more than the page cache
  # holds at 10 million) from its first offset while producers keep
  # writing the tail of another topic at TAIL_RATE msg/s.
  echo "== backlog: producing $BACKLOG messages to bench-backlog"
  bench produce --topic bench-backlog --queues 8 --mode async --clients 4 --inflight "${INFLIGHT:-512}" --msgs "$BACKLOG"
  echo "== backlog: consuming it while 2 producers write ${TAIL_RATE:-5000} msg/s to bench-tail"
  "$RAFTMQ" bench produce --namesrv "$NSADDR" --topic bench-tail --queues 8 --mode async --clients 2 \
    --rate "${TAIL_RATE:-5000}" --duration 24h --size 1024 --no-progress > "$OUT/tail.log" 2>&1 &
  TAIL=$!
  bench consume --topic bench-backlog --clients 2 --msgs "$BACKLOG"
  kill -INT "$TAIL" 2>/dev/null || true
  wait "$TAIL" 2>/dev/null || true
  echo "== tail producer during the backlog read:"
  grep -E '^(produce|  latency)' "$OUT/tail.log" | tee -a "$OUT/raftmq.log"
fi
stop_cluster

# The dedupe window's cost: the async and sync produce again, each on a
# fresh group, with the window on (the default, 2 min) and off
# (--dedupe-window 0), so neither side inherits the runs above.
if [ "${DEDUPE:-1}" = 1 ]; then
  for round in $(seq 1 "${DEDUPE_ROUNDS:-3}"); do
    for side in dedupe nodedupe; do
      echo "== $side (round $round): the same async and sync produce on a fresh group"
      if [ "$side" = dedupe ]; then start_cluster "$side$round"; else start_cluster "$side$round" --dedupe-window 0; fi
      bench produce --topic bench-async --queues 8 --mode async --clients 4 --inflight "${INFLIGHT:-512}" --msgs "$MSGS" | tee -a "$OUT/$side.async.log"
      bench produce --topic bench-sync --queues 8 --mode sync --clients 16 --msgs "$SYNC_MSGS" | tee -a "$OUT/$side.sync.log"
      stop_cluster
    done
  done
fi

# The cost of security: the same produce on a fresh group with ACL 1.0
# (every request signed by the clients and checked, with per-topic
# permissions) and TLS on every port, raft between the peers included,
# against a fresh plain group.
if [ "${SECURE:-1}" = 1 ]; then
  read -r CA CERT KEY <<<"$("$RAFTMQ" bench certs --dir "$DATA/certs")"
  cat > "$DATA/plain_acl.yml" <<'YML'
accounts:
  - accessKey: bench-admin
    secretKey: bench-secret
    admin: true
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms:
      - bench-async=PUB|SUB
      - bench-sync=PUB|SUB
YML
  for round in $(seq 1 "${SECURE_ROUNDS:-2}"); do
    for side in secure plain; do
      echo "== $side (round $round): the same async and sync produce on a fresh group"
      if [ "$side" = secure ]; then
        NS_EXTRA=(--tls-cert "$CERT" --tls-key "$KEY")
        BENCH_EXTRA=(--tls-ca "$CA" --access-key bench-admin --secret-key bench-secret)
        start_cluster "$side$round" --tls-cert "$CERT" --tls-key "$KEY" --tls-ca "$CA" --acl "$DATA/plain_acl.yml"
      else
        NS_EXTRA=(); BENCH_EXTRA=()
        start_cluster "$side$round"
      fi
      bench produce --topic bench-async --queues 8 --mode async --clients 4 --inflight "${INFLIGHT:-512}" --msgs "$MSGS" | tee -a "$OUT/$side.async.log"
      bench produce --topic bench-sync --queues 8 --mode sync --clients 16 --msgs "$SYNC_MSGS" | tee -a "$OUT/$side.sync.log"
      stop_cluster
    done
  done
  NS_EXTRA=(); BENCH_EXTRA=()
fi

# free_base FROM: the first base >= FROM (steps of 500, below 32000) whose
# dev ports (base + 100*g + 10*i, g, i < 3) are not listening.
free_base() {
  local b=$1 g i busy listening
  listening=$(command -v ss >/dev/null && ss -Htln | awk '{ n = split($4, a, ":"); print a[n] }' || true)
  while [ "$b" -lt 32000 ]; do
    busy=0
    for g in 0 1 2; do for i in 0 1 2; do
      grep -qx "$((b + 100 * g + 10 * i))" <<<"$listening" && busy=1
    done; done
    [ "$busy" = 0 ] && { echo "$b"; return; }
    b=$((b + 500))
  done
  echo "no free port base" >&2; return 1
}

# Scale-out: the same async produce and consume against 1, 2 and 3 groups
# (3 nodes each) under one name server, the topic on every group.
for n in ${SCALE_GROUPS-1 2 3}; do
  echo "== $n broker group(s): raftmq dev --groups $n"
  read -r GNS <<<"$("$RAFTMQ" bench ports 1)"
  # dev's node ports are a base +100 per group and +10 per node: bases below
  # the ephemeral range (32768+), where no outgoing connection holds them,
  # with none of their ports listening.
  GB=$(free_base 20000); GR=$(free_base $((GB + 1000)))
  RUN_DIR=$DATA/groups$n
  "$RAFTMQ" dev --groups "$n" --data "$DATA/groups$n" --namesrv-port "$GNS" --broker-port "$GB" --raft-port "$GR" \
    --http-port 0 --flush SYNC_FLUSH > "$OUT/dev.groups$n.log" 2>&1 &
  PIDS+=($!)
  for _ in $(seq 1 100); do grep -q 'are up' "$OUT/dev.groups$n.log" && break; sleep 0.2; done
  "$RAFTMQ" bench produce --namesrv "127.0.0.1:$GNS" --topic bench-groups --queues 8 --mode async --clients 4 \
    --inflight "${INFLIGHT:-512}" --msgs "$MSGS" --size 1024 --no-progress | tee -a "$OUT/groups$n.log"
  "$RAFTMQ" bench consume --namesrv "127.0.0.1:$GNS" --topic bench-groups --clients 1 --msgs "$MSGS" --size 1024 --no-progress | tee -a "$OUT/groups$n.log"
  stop_cluster
done

if [ "$PEER" = none ]; then exit 0; fi
echo "== NATS JetStream: $PEER always"
MSGS=$MSGS bash "$PEER" always 2>&1 | tee "$OUT/nats.log"

# ours: the raftmq-bench lines, in workload order (async, sync, consume)
# fieldof FILE LINE NAME: NAME=value on line LINE of FILE.
fieldof() { sed -n "$2p" "$1" | grep -o "$3=[^ ]*" | head -1 | cut -d= -f2; }
field() { fieldof "$OUT/raftmq.log" "$@"; }
mapfile -t OURS < <(grep -n '^raftmq-bench ' "$OUT/raftmq.log" | head -3 | cut -d: -f1)
# theirs: the msgs/sec of each stats line, and P50/P99 of each latency line (us)
mapfile -t RATE < <(grep -E 'aggregated stats|consumer.*stats:' "$OUT/nats.log" | grep -oE '[0-9,]+ msgs/sec' | tr -d , | cut -d' ' -f1)
mapfile -t LAT < <(grep 'latencies per operation' "$OUT/nats.log" | sed -E 's/.*P50 ([0-9,.]+)us.*P99 ([0-9,.]+)us.*/\1 \2/' | tr -d ,)
names=("async produce 4 clients" "sync produce 16 clients" "consume backlog")
echo
echo "== summary (1 KiB messages; raftmq SYNC_FLUSH vs NATS JetStream sync_interval always; latency p50/p99 in ms)"
printf '%-26s %12s %12s %7s   %-17s %-17s\n' workload raftmq_msg/s nats_msg/s ratio raftmq_p50/p99 nats_p50/p99
for k in 0 1 2; do
  line=${OURS[$k]:-}
  ours=$( [ -n "$line" ] && field "$line" msgs_per_sec || echo 0)
  theirs=${RATE[$k]:-0}
  ratio=$(awk -v a="$ours" -v b="$theirs" 'BEGIN { if (b > 0) printf "%.2fx", a / b; else print "-" }')
  ol="-"; tl="-"
  if [ "$k" -lt 2 ] && [ -n "$line" ]; then ol="$(field "$line" p50_ms)/$(field "$line" p99_ms)"; fi
  if [ "$k" -lt 2 ] && [ -n "${LAT[$k]:-}" ]; then tl=$(awk -v s="${LAT[$k]}" 'BEGIN { split(s, a, " "); printf "%.3f/%.3f", a[1] / 1000, a[2] / 1000 }'); fi
  printf '%-26s %12s %12s %7s   %-17s %-17s\n' "${names[$k]}" "$ours" "$theirs" "$ratio" "$ol" "$tl" | tee -a "$OUT/summary.txt"
done
# rate FILE N: msg/s of the N-th raftmq-bench line of FILE.
rate() { grep '^raftmq-bench ' "$1" | fieldof /dev/stdin "$2" msgs_per_sec; }
sync_rate=${OURS[1]:+$(field "${OURS[1]}" msgs_per_sec)}
echo
echo "== semantics (raftmq only, same run)"
printf '%-40s %12s %12s %7s\n' comparison msg/s baseline ratio | tee -a "$OUT/summary.txt"
cmp_line() { awk -v n="$1" -v a="$2" -v b="$3" 'BEGIN { r = (b > 0) ? sprintf("%.2fx", a / b) : "-"; printf "%-40s %12s %12s %7s\n", n, a, b, r }' | tee -a "$OUT/summary.txt"; }
cmp_line "txn (16 clients) vs sync produce" "$(rate "$OUT/txn.log" 1)" "${sync_rate:-0}"
# scanned FILE N: backlog messages per second the N-th consume of FILE went through.
scanned() { grep '^raftmq-bench ' "$1" | fieldof /dev/stdin "$2" elapsed_s | awk -v n="$SQLN" '{ if ($1 > 0) printf "%.0f", n / $1; else print 0 }'; }
if [ -s "$OUT/sql.log" ]; then
  plain=$(rate "$OUT/sql.log" 1)
  cmp_line "SQL92 n < 5 (1/2): backlog scanned/s" "$(scanned "$OUT/sql.log" 2)" "$plain"
  cmp_line "SQL92 n = 0 (1/10): backlog scanned/s" "$(scanned "$OUT/sql.log" 3)" "$plain"
  cmp_line "SQL92 TAGS+n (1/20): backlog scanned/s" "$(scanned "$OUT/sql.log" 4)" "$plain"
fi
# median FILE: the median msg/s of FILE's raftmq-bench lines.
median() { grep -o 'msgs_per_sec=[0-9]*' "$1" | cut -d= -f2 | sort -n | awk '{ v[NR] = $1 } END { if (NR) print (NR % 2) ? v[(NR + 1) / 2] : int((v[NR / 2] + v[NR / 2 + 1]) / 2); else print 0 }'; }
one_group=$( [ -s "$OUT/groups1.log" ] && rate "$OUT/groups1.log" 1 || echo 0)
one_consume=$( [ -s "$OUT/groups1.log" ] && rate "$OUT/groups1.log" 2 || echo 0)
for n in ${SCALE_GROUPS-1 2 3}; do
  [ "$n" = 1 ] || [ ! -s "$OUT/groups$n.log" ] && continue
  cmp_line "async produce, $n groups vs 1" "$(rate "$OUT/groups$n.log" 1)" "$one_group"
  cmp_line "consume, $n groups vs 1" "$(rate "$OUT/groups$n.log" 2)" "$one_consume"
done
if [ -s "$OUT/plain.async.log" ]; then
  cmp_line "async, ACL+TLS vs plain (median of ${SECURE_ROUNDS:-2})" "$(median "$OUT/secure.async.log")" "$(median "$OUT/plain.async.log")"
  cmp_line "sync 16 clients, ACL+TLS vs plain" "$(median "$OUT/secure.sync.log")" "$(median "$OUT/plain.sync.log")"
fi
if [ -s "$OUT/nodedupe.async.log" ]; then
  cmp_line "async, dedupe on vs off (median of ${DEDUPE_ROUNDS:-3})" "$(median "$OUT/dedupe.async.log")" "$(median "$OUT/nodedupe.async.log")"
  cmp_line "sync 16 clients, dedupe on vs off" "$(median "$OUT/dedupe.sync.log")" "$(median "$OUT/nodedupe.sync.log")"
fi
