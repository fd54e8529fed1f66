#!/usr/bin/env bash
# A/B of builds or broker flags on one workload, alternating, each run on a
# fresh group: how docs/BENCHMARKS.md measures a change before keeping it.
#
#   usage: scripts/ab.sh WORKLOAD ROTATIONS VARIANT...
#     WORKLOAD  async (500,000 × 1 KiB, 4 clients, 512 in flight each),
#               sync (16 clients for 20 s), consume (500,000 produced first,
#               then read by one consumer), big (10,000 × 64 KiB async)
#     VARIANT   BINARY[:BROKER-FLAGS], e.g. bin/raftmq bin/raftmq:--no-early-ack
#
# One line per run: msg/s, p50/p99 ms, the brokers' CPU seconds per million
# messages (from /proc) and the bench client's user+system CPU seconds.
set -u
[ $# -ge 3 ] || { sed -n 2,12p "$0"; exit 2; }
wl=$1 rot=$2; shift 2
first=${1%%:*}
read -r -a ports <<<"$("$first" bench ports 7)"
NS=127.0.0.1:${ports[0]}
PEERS="n1/127.0.0.1:${ports[1]}/127.0.0.1:${ports[4]},n2/127.0.0.1:${ports[2]}/127.0.0.1:${ports[5]},n3/127.0.0.1:${ports[3]}/127.0.0.1:${ports[6]}"
HZ=$(getconf CLK_TCK)
size=1024
case $wl in
  sync) args=(produce --topic t --queues 8 --mode sync --clients 16 --duration 20s) ;;
  async) args=(produce --topic t --queues 8 --mode async --clients 4 --inflight 512 --msgs 500000) ;;
  big) args=(produce --topic t --queues 8 --mode async --clients 4 --inflight 32 --msgs 10000); size=65536 ;;
  consume) args=(consume --topic t --clients 1 --msgs 500000) ;;
  *) echo "unknown workload $wl" >&2; exit 2 ;;
esac
for r in $(seq 1 "$rot"); do
  for v in "$@"; do
    bin=${v%%:*} flags=()
    [ "$v" != "$bin" ] && read -r -a flags <<<"${v#*:}"
    d=$(mktemp -d /tmp/raftmq-ab.XXXXXX) pids=() bp=()
    "$bin" namesrv --listen "$NS" --log-level warn > "$d/ns.log" 2>&1 &
    pids+=($!)
    for i in 1 2 3; do
      "$bin" broker --node-id "n$i" --peers "$PEERS" --listen "127.0.0.1:${ports[$((i + 3))]}" --data "$d/n$i" \
        --namesrv "$NS" --flush SYNC_FLUSH --log-level warn --http 127.0.0.1:0 "${flags[@]}" > "$d/b$i.log" 2>&1 &
      pids+=($!) bp+=($!)
    done
    cpu() { local t=0 p; for p in "${bp[@]}"; do t=$((t + $(awk '{ print $14 + $15 }' "/proc/$p/stat"))); done; echo "$t"; }
    if [ "$wl" = consume ]; then
      "$bin" bench produce --namesrv "$NS" --topic t --queues 8 --mode async --clients 4 --inflight 512 --msgs 500000 \
        --size "$size" --no-progress > /dev/null
    fi
    c0=$(cpu)
    # times: the subshell's children's user and system CPU, the bench's.
    ( "$bin" bench "${args[@]}" --namesrv "$NS" --size "$size" --no-progress > "$d/bench.out" 2>&1; times > "$d/times" )
    c1=$(cpu)
    line=$(grep '^raftmq-bench' "$d/bench.out" | tail -1)
    msgs=$(grep -o 'msgs=[0-9]*' <<<"$line" | head -1 | cut -d= -f2)
    printf '%s r%d %s %s %s %s broker_cpu_s_per_M=%s client_cpu_s=%s\n' "$wl" "$r" "$v" \
      "$(grep -o 'msgs_per_sec=[0-9]*' <<<"$line")" "$(grep -o 'p50_ms=[0-9.]*' <<<"$line")" "$(grep -o 'p99_ms=[0-9.]*' <<<"$line")" \
      "$(awk -v t=$((c1 - c0)) -v hz="$HZ" -v n="${msgs:-0}" 'BEGIN { if (n > 0) printf "%.1f", t / hz / n * 1e6; else print "-" }')" \
      "$(awk 'NR == 2 { u = $1; s = $2; sub(/m/, " ", u); sub(/m/, " ", s); split(u, a, " "); split(s, b, " ");
        printf "%.2f", a[1] * 60 + a[2] + b[1] * 60 + b[2] }' "$d/times")"
    kill "${pids[@]}" 2>/dev/null
    wait 2>/dev/null
    rm -rf "$d"
  done
done
