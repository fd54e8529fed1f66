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
#   ROUNDS   rounds of the core workloads (default 3): each a fresh group running
#            async produce, sync produce and consume, then the peer's same three;
#            the summary gives each workload's median (min–max) and the ratio
#   MSGS     async produce count and consume backlog (default 500000, the peer too)
#   SYNC_DURATION  how long the 16-client sync produce, the official client's
#            16 sync producers and the paced e2e run (default 20s)
#   INFLIGHT async sends outstanding per client (default 512: natscli's async
#            publisher keeps about as many unacknowledged per client — its
#            throughput × latency here is ~470 per client)
#   SYNC_MSGS  transaction produce count (default 20000)
#   BIG=0      skip the 64 KiB pair (async, sync and consume of BIG_MSGS,
#              default 10000, messages of 64 KiB, then the peer at 64KB; the
#              peer's stream holds at most 1 GiB, so its fixed 20000-message
#              sync publish cannot run at 64 KiB and is not counted)
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
#   BROKER_ARGS  extra flags for every broker started (e.g. --no-early-ack)
#   CORE_ONLY=1  run only the core rounds (with PEER=none: an A/B of two
#              builds or flags, one `make bench`-shaped round at a time)
#   BACKLOG=N  the cold-backlog pair (default 1000000 with BACKLOG_BROKER_ARGS
#              "--access-message-in-memory-max-bytes 268435456", so a consumer
#              more than 256 MiB behind reads from a follower; BACKLOG=0 skips
#              it; BACKLOG=10000000 with the ratio is issue 18's full size):
#              consumers of a cold backlog read
#              from followers so tail producers are not slowed): on a fresh
#              group with follower reads on (--slave-read-enable=true, the
#              default) and on one with them off, produce N messages, then
#              consume them from the first offset (2 consumers) while 2
#              producers write TAIL_RATE (default 5000) msg/s to another
#              topic; reports per side the consume rate, the tail producer's
#              rate and ack latency, and the messages each node served.
#              BACKLOG_ROUNDS=N (default 1) alternates the pair N times;
#              BACKLOG_BROKER_ARGS adds broker flags to both sides (e.g.
#              "--access-message-in-memory-max-ratio 10"; the default
#              threshold is 40 % of RAM: with 24 GiB, a consumer more than
#              ~9.6 GiB of commitlog behind the end is sent to a follower).
#              Disk: ~3.5 GiB per million 1 KiB messages per side (3 nodes);
#              each side's data is deleted when it ends. All three nodes
#              share this machine's page cache and disk: the pair measures
#              what taking the cold reads off the leader process is worth,
#              not separate machines' caches.
set -euo pipefail
RAFTMQ=${RAFTMQ:-bin/raftmq}
MSGS=${MSGS:-500000}
SYNC_MSGS=${SYNC_MSGS:-20000}
PEER=${PEER:-../shared/bench/peer-nats.sh}
OUT=${OUT:-$(mktemp -d /tmp/raftmq-bench.XXXXXX)}
mkdir -p "$OUT"
DATA=$(mktemp -d /tmp/raftmq-bench-data.XXXXXX)
PIDS=()
BROKER_PIDS=()

RUN_DIR=
# stop_cluster stops the run's processes and deletes its data (the disk
# is shared; a dozen groups' logs would fill it).
stop_cluster() {
  local p
  for p in "${PIDS[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]:-}"; do [ -n "$p" ] && wait "$p" 2>/dev/null || true; done
  PIDS=()
  BROKER_PIDS=()
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
read -r -a BROKER_EXTRA <<<"${BROKER_ARGS:-}"
start_cluster() {
  local run=$1 i=0 b pp; shift
  RUN_DIR=$DATA/$run
  "$RAFTMQ" namesrv --listen "$NSADDR" --log-level warn "${NS_EXTRA[@]}" > "$OUT/namesrv.$run.log" 2>&1 &
  PIDS+=($!)
  for b in "$B1" "$B2" "$B3"; do
    i=$((i + 1)); pp=$(eval echo "\$P$i")
    "$RAFTMQ" broker --node-id "n$i" --peers "$PEERS" --listen "127.0.0.1:$b" --data "$DATA/$run/n$i" \
      --namesrv "$NSADDR" --flush SYNC_FLUSH --log-level warn --http "127.0.0.1:$pp" "${PROF[@]}" "${BROKER_EXTRA[@]}" "$@" \
      > "$OUT/broker-n$i.$run.log" 2>&1 &
    PIDS+=($!)
    BROKER_PIDS+=($!)
  done
}
HZ=$(getconf CLK_TCK)
ROUNDS=${ROUNDS:-3}
SYNC_DURATION=${SYNC_DURATION:-20s}

bench() { local w=$1; shift; "$RAFTMQ" bench "$w" --size 1024 "$@" --namesrv "$NSADDR" --csv "$OUT/raftmq.csv" --no-progress "${BENCH_EXTRA[@]}" | tee -a "$OUT/raftmq.log"; }

# broker_cpu: CPU ticks (user + system) the current cluster's broker
# processes have used so far.
broker_cpu() {
  local p t=0
  for p in "${BROKER_PIDS[@]:-}"; do
    [ -n "$p" ] && t=$((t + $(awk '{ print $14 + $15 }' "/proc/$p/stat" 2>/dev/null || echo 0)))
  done
  echo "$t"
}
# kv LINE NAME: NAME=value of LINE.
kv() { grep -o "$2=[^ ]*" <<<"$1" | head -1 | cut -d= -f2; }
# record SYSTEM WORKLOAD ROUND LINE CPU_TICKS: one result line (msg/s,
# latency, broker CPU seconds per million messages) into results.txt.
record() {
  local cpu
  cpu=$(awk -v t="$5" -v hz="$HZ" -v n="$(kv "$4" msgs)" 'BEGIN { if (n > 0 && t != "") printf "%.1f", t / hz / n * 1e6; else print "-" }')
  echo "result system=$1 workload=$2 round=$3 msgs=$(kv "$4" msgs) msgs_per_sec=$(kv "$4" msgs_per_sec) p50_ms=$(kv "$4" p50_ms) p99_ms=$(kv "$4" p99_ms) p999_ms=$(kv "$4" p999_ms) cpu_s_per_m=$cpu" >> "$OUT/results.txt"
}
# measure WORKLOAD ROUND BENCH-ARGS...: one `raftmq bench` workload, with the
# brokers' CPU over it.
measure() {
  local wl=$1 round=$2 c0 line; shift 2
  c0=$(broker_cpu)
  bench "$@" > "$OUT/last.txt" || true
  cat "$OUT/last.txt"
  line=$(grep '^raftmq-bench ' "$OUT/last.txt" | tail -1)
  record raftmq "$wl" "$round" "$line" $(($(broker_cpu) - c0))
}
# peer SIZE MSGS SUFFIX ROUND: one peer-nats.sh run; its async, sync and
# consume lines into results.txt as workloads async$SUFFIX, sync$SUFFIX,
# consume$SUFFIX.
peer() {
  local f="$OUT/nats.$3$4.log" k rate lat
  [ "$PEER" = none ] && return 0
  echo "== NATS JetStream ($PEER always, $1 messages, round $4)"
  SIZE=$1 MSGS=$2 bash "$PEER" always 2>&1 | tee "$f"
  # Each section starts at its "peer-nats <workload>" line; a workload the
  # peer could not run (e.g. over its stream's byte limit) has no stats line.
  local names=(async sync consume) heads=(async-publish sync-publish consume) msgs=("$2" 20000 "$2")
  for k in 0 1 2; do
    rate=$(awk -v h="peer-nats ${heads[$k]}" 'index($0, "peer-nats ") == 1 { on = (index($0, h) == 1) }
      on && /aggregated stats|consumer.*stats:/ { match($0, /[0-9,]+ msgs\/sec/); v = substr($0, RSTART, RLENGTH); gsub(/[, a-z\/]/, "", v); print v; exit }' "$f")
    lat=$(awk -v h="peer-nats ${heads[$k]}" 'index($0, "peer-nats ") == 1 { on = (index($0, h) == 1) }
      on && /latencies per operation/ { print; exit }' "$f" | sed -E 's/.*P50 ([0-9,.]+)us.*P99 ([0-9,.]+)us.*/\1 \2/' | tr -d ,)
    local p50=- p99=-
    if [ -n "$lat" ]; then
      p50=$(awk -v s="$lat" 'BEGIN { split(s, a, " "); printf "%.3f", a[1] / 1000 }')
      p99=$(awk -v s="$lat" 'BEGIN { split(s, a, " "); printf "%.3f", a[2] / 1000 }')
    fi
    [ -z "$rate" ] && { echo "== NATS ${heads[$k]} ($1) printed no stats: not counted"; continue; }
    record nats "${names[$k]}$3" "$4" "msgs=${msgs[$k]} msgs_per_sec=$rate p50_ms=$p50 p99_ms=$p99 p999_ms=-" ""
  done
}

echo "== raftmq: namesrv + 3 brokers (SYNC_FLUSH) on loopback, data in $DATA, output in $OUT"
echo "== $(date -u +%FT%TZ) commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
# The official client's benchmark producer, built before any cluster runs.
[ "${CORE_ONLY:-0}" = 1 ] || (cd integration && go build -o "$OUT/officialbench" ./examples/officialbench)
: > "$OUT/results.txt"

# The core workloads, ROUNDS times, each round a fresh group then the peer:
# async produce (MSGS), sync produce with 16 clients (SYNC_DURATION) and
# a consume of the async backlog.
for round in $(seq 1 "$ROUNDS"); do
  echo "== round $round of $ROUNDS: raftmq"
  start_cluster "core$round"
  # The first workload creates its topic, retrying while the group elects.
  measure async "$round" produce --topic bench-async --queues 8 --mode async --clients 4 --inflight "${INFLIGHT:-512}" --msgs "$MSGS"
  measure sync "$round" produce --topic bench-sync --queues 8 --mode sync --clients 16 --duration "$SYNC_DURATION"
  measure consume "$round" consume --topic bench-async --clients 1 --msgs "$MSGS"
  stop_cluster
  peer 1KB "$MSGS" "" "$round"
done

# CORE_ONLY=1 skips everything up to the summary (the block ends at
# "end of CORE_ONLY").
if [ "${CORE_ONLY:-0}" != 1 ]; then
start_cluster main
# The official Go client's benchmark producer: 16 sync instances, 1000 B
# (a first small send creates the topic, retrying while the group elects).
bench produce --topic bench-official --queues 8 --mode sync --clients 1 --msgs 10 > /dev/null
c0=$(broker_cpu)
"$OUT/officialbench" -namesrv "$NSADDR" -topic bench-official -clients 16 -size 1000 -duration "$SYNC_DURATION" | tee -a "$OUT/raftmq.log" > "$OUT/last.txt" || true
cat "$OUT/last.txt"
record raftmq official-sync-16 1 "$(grep '^official-bench ' "$OUT/last.txt" | tail -1)" $(($(broker_cpu) - c0))
# End to end: send to a push consumer's handler at a paced 10k msg/s.
measure e2e-push-10k 1 e2e --push --topic bench-e2e --queues 8 --mode async --clients 2 --inflight 64 --rate 10000 --duration "$SYNC_DURATION"

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

stop_cluster

# served_by PORT TOPIC: messages the node whose HTTP port is PORT delivered
# to pulls of TOPIC since it started (rocketmq_messages_out_total).
served_by() {
  curl -s "http://127.0.0.1:$1/metrics" | awk -v t="topic=\"$2\"" '/^rocketmq_messages_out_total[{]/ && index($0, t) { s += $NF } END { printf "%d", s }'
}
# role_of PORT: Leader or Follower, from the node's /healthz.
role_of() { curl -s "http://127.0.0.1:$1/healthz" | awk '{ sub(/,$/, "", $3); print $3 }'; }

# The cold-backlog pair: follower reads on and off, each on a fresh group.
BACKLOG=${BACKLOG-1000000}
if [ -z "${BACKLOG_BROKER_ARGS+set}" ] && [ "$BACKLOG" = 1000000 ]; then
  BACKLOG_BROKER_ARGS="--access-message-in-memory-max-bytes 268435456"
fi
if [ -n "$BACKLOG" ] && [ "$BACKLOG" != 0 ]; then
  read -r -a BACKLOG_ARGS <<<"${BACKLOG_BROKER_ARGS:-}"
  for round in $(seq 1 "${BACKLOG_ROUNDS:-1}"); do
    for side in on off; do
      flag=true; [ "$side" = off ] && flag=false
      echo "== backlog, follower reads $side (round $round): producing $BACKLOG messages to bench-backlog"
      start_cluster "backlog-$side$round" "--slave-read-enable=$flag" "${BACKLOG_ARGS[@]}"
      bench produce --topic bench-backlog --queues 8 --mode async --clients 4 --inflight "${INFLIGHT:-512}" --msgs "$BACKLOG" > /dev/null
      echo "== backlog, follower reads $side: consuming it while 2 producers write ${TAIL_RATE:-5000} msg/s to bench-tail"
      c0=$(broker_cpu)
      "$RAFTMQ" bench produce --namesrv "$NSADDR" --topic bench-tail --queues 8 --mode async --clients 2 \
        --rate "${TAIL_RATE:-5000}" --duration 24h --size 1024 --no-progress > "$OUT/tail.$side$round.log" 2>&1 &
      TAIL=$!
      bench consume --topic bench-backlog --clients 2 --msgs "$BACKLOG" > "$OUT/last.txt" || true
      kill -INT "$TAIL" 2>/dev/null || true
      wait "$TAIL" 2>/dev/null || true
      cpu=$(($(broker_cpu) - c0))
      cat "$OUT/last.txt" | tee -a "$OUT/backlog.$side.log"
      record raftmq "backlog-consume-$side" "$round" "$(grep '^raftmq-bench ' "$OUT/last.txt" | tail -1)" "$cpu"
      echo "== tail producer during the backlog read (follower reads $side):"
      grep -E '^(produce|  latency)' "$OUT/tail.$side$round.log" | tee -a "$OUT/backlog.$side.log" "$OUT/raftmq.log"
      record raftmq "backlog-tail-$side" "$round" "$(grep '^raftmq-bench ' "$OUT/tail.$side$round.log" | tail -1)" ""
      line="served bench-backlog (follower reads $side, round $round):"
      for i in 1 2 3; do
        pp=$(eval echo "\$P$i")
        line="$line n$i $(role_of "$pp") $(served_by "$pp" bench-backlog)"
      done
      echo "$line" | tee -a "$OUT/backlog.$side.log" "$OUT/raftmq.log"
      stop_cluster
    done
  done
fi

# 64 KiB messages on a fresh group, then the peer with the same size.
if [ "${BIG:-1}" = 1 ]; then
  echo "== 64 KiB messages: raftmq"
  start_cluster big
  measure async-64k 1 produce --size 65536 --topic bench-64k --queues 8 --mode async --clients 4 --inflight 32 --msgs "${BIG_MSGS:-10000}"
  measure sync-64k 1 produce --size 65536 --topic bench-64k-sync --queues 8 --mode sync --clients 16 --duration "$SYNC_DURATION"
  measure consume-64k 1 consume --size 65536 --topic bench-64k --clients 1 --msgs "${BIG_MSGS:-10000}"
  stop_cluster
  peer 64KB "${BIG_MSGS:-10000}" -64k 1
fi

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

fi # end of CORE_ONLY

# The summary: per workload, the median (min–max) over its rounds of
# each system, the ratio of the medians, the median latencies and the
# brokers' CPU seconds per million messages (raftmq; from /proc).
summarize() {
  awk '
    function med(a, n,   i, j, t) { for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
      return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
    function get(k,   i) { for (i = 1; i <= NF; i++) if (index($i, k "=") == 1) return substr($i, length(k) + 2); return "" }
    /^result / {
      s = get("system"); w = get("workload"); key = s SUBSEP w
      if (!(w in seen)) { seen[w] = 1; order[++nw] = w }
      n[key]++; r[key, n[key]] = get("msgs_per_sec") + 0
      p50[key, n[key]] = get("p50_ms"); p99[key, n[key]] = get("p99_ms"); cpu[key, n[key]] = get("cpu_s_per_m")
    }
    function stat(key, arr,   i, m, v, c) { c = 0; for (i = 1; i <= n[key]; i++) { v = arr[key, i]; if (v != "-" && v != "") m[++c] = v + 0 }
      return c ? med(m, c) : "-" }
    function rng(key,   i, lo, hi) { lo = hi = r[key, 1]; for (i = 2; i <= n[key]; i++) { if (r[key, i] < lo) lo = r[key, i]; if (r[key, i] > hi) hi = r[key, i] }
      return n[key] > 1 ? sprintf("%d–%d", lo, hi) : "" }
    function fmtlat(key,   a, b) { a = stat(key, p50); b = stat(key, p99); if (a == "-") return "-"; return sprintf("%.2f/%.2f", a, b) }
    END {
      printf "%-18s %4s %10s %-15s %10s %-15s %7s  %-13s %-13s %8s\n", "workload", "runs", "raftmq", "(min–max)", "nats", "(min–max)", "ratio", "raftmq p50/99", "nats p50/99", "cpu s/M"
      for (i = 1; i <= nw; i++) {
        w = order[i]; o = "raftmq" SUBSEP w; t = "nats" SUBSEP w
        om = n[o] ? stat(o, r) : 0; tm = n[t] ? stat(t, r) : 0
        ratio = (tm > 0 && om > 0) ? sprintf("%.2fx", om / tm) : "-"
        printf "%-18s %4d %10d %-15s %10s %-15s %7s  %-13s %-13s %8s\n", w, n[o], om, rng(o), n[t] ? sprintf("%d", tm) : "-", n[t] ? rng(t) : "", ratio,
          n[o] ? fmtlat(o) : "-", n[t] ? fmtlat(t) : "-", n[o] ? stat(o, cpu) : "-"
      }
    }' "$OUT/results.txt"
}
echo
echo "== summary: medians over rounds (1 KiB unless -64k; raftmq SYNC_FLUSH vs NATS JetStream sync_interval always;"
echo "   sync: raftmq 16 clients for $SYNC_DURATION, NATS its fixed 20000; latency ms; cpu s/M = broker CPU seconds per million messages)"
summarize | tee -a "$OUT/summary.txt"
# fieldof FILE LINE NAME: NAME=value on line LINE of FILE.
fieldof() { sed -n "$2p" "$1" | grep -o "$3=[^ ]*" | head -1 | cut -d= -f2; }
# rate FILE N: msg/s of the N-th raftmq-bench line of FILE.
rate() { grep '^raftmq-bench ' "$1" | fieldof /dev/stdin "$2" msgs_per_sec; }
sync_rate=$(awk '/^result system=raftmq workload=sync / { for (i = 1; i <= NF; i++) if ($i ~ /^msgs_per_sec=/) v[++n] = substr($i, 14) + 0 }
  END { for (i = 2; i <= n; i++) { t = v[i]; for (j = i - 1; j >= 1 && v[j] > t; j--) v[j + 1] = v[j]; v[j + 1] = t }; print n ? v[int((n + 1) / 2)] : 0 }' "$OUT/results.txt")
echo
echo "== semantics (raftmq only, same run)"
printf '%-40s %12s %12s %7s\n' comparison msg/s baseline ratio | tee -a "$OUT/summary.txt"
cmp_line() { awk -v n="$1" -v a="$2" -v b="$3" 'BEGIN { r = (b > 0) ? sprintf("%.2fx", a / b) : "-"; printf "%-40s %12s %12s %7s\n", n, a, b, r }' | tee -a "$OUT/summary.txt"; }
[ -s "$OUT/txn.log" ] && cmp_line "txn (16 clients) vs sync produce" "$(rate "$OUT/txn.log" 1)" "${sync_rate:-0}"
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
if [ -s "$OUT/backlog.off.log" ]; then
  # field WORKLOAD NAME: the median of NAME over WORKLOAD's result lines.
  field() { awk -v w="workload=$1" -v k="$2=" '$0 ~ "^result system=raftmq " w " " { for (i = 1; i <= NF; i++) if (index($i, k) == 1) v[++n] = substr($i, length(k) + 1) + 0 }
    END { for (i = 2; i <= n; i++) { t = v[i]; for (j = i - 1; j >= 1 && v[j] > t; j--) v[j + 1] = v[j]; v[j + 1] = t }; if (n) print (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2; else print 0 }' "$OUT/results.txt"; }
  cmp_line "backlog consume, follower reads on vs off" "$(field backlog-consume-on msgs_per_sec)" "$(field backlog-consume-off msgs_per_sec)"
  cmp_line "tail produce during it, on vs off" "$(field backlog-tail-on msgs_per_sec)" "$(field backlog-tail-off msgs_per_sec)"
  for q in p50_ms p99_ms p999_ms; do
    cmp_line "tail ack latency $q, on vs off" "$(field backlog-tail-on $q)" "$(field backlog-tail-off $q)"
  done
  grep -h '^served bench-backlog' "$OUT/backlog.on.log" "$OUT/backlog.off.log" | tee -a "$OUT/summary.txt"
fi
if [ -s "$OUT/nodedupe.async.log" ]; then
  cmp_line "async, dedupe on vs off (median of ${DEDUPE_ROUNDS:-3})" "$(median "$OUT/dedupe.async.log")" "$(median "$OUT/nodedupe.async.log")"
  cmp_line "sync 16 clients, dedupe on vs off" "$(median "$OUT/dedupe.sync.log")" "$(median "$OUT/nodedupe.sync.log")"
fi
