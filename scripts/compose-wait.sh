#!/usr/bin/env bash
# Waits (up to 90 s) until every broker container of the raftmq compose
# project reports healthy; prints their states on failure.
set -euo pipefail
for _ in $(seq 1 90); do
  states=$(docker ps --filter label=com.docker.compose.project=raftmq --format '{{.Names}} {{.Status}}' | grep -E -- '[_-](a|b)[0-9]' || true)
  if [ -n "$states" ] && ! grep -qv '(healthy)' <<<"$states"; then
    echo "all brokers healthy:"; echo "$states"; exit 0
  fi
  sleep 1
done
echo "brokers not healthy after 90 s:" >&2
docker ps --filter label=com.docker.compose.project=raftmq --format '{{.Names}} {{.Status}}' >&2
exit 1
