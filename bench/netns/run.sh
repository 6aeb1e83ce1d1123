#!/usr/bin/env bash
# tessera-bench-remote across hosts made of network namespaces (as tests/netns_lab.hpp builds them): the
# scheduler, two workers and the client each in a namespace of its own, joined by veth pairs and a bridge,
# CURVE on, after the same bench on loopback in the same run, for comparison; then the time from the healing
# of a 5 s partition of the scheduler to the first result stored after it. The bench runs again with 1 and
# 5 ms of delay on every host's link (tc netem, or build/bin/link_shaper where the kernel has no netem).
# Needs root, iproute2 and iptables.
# Usage: bench/netns/run.sh [BUILD_DIR (default build)]  — prints JSON lines, one per measurement.
# PLAIN=1: the namespace cluster without CURVE (security.allow_insecure), to tell encryption's share.
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
bin=$build/bin
plugin=$build/lib/libtessera_bench_plugin.so
examples=$build/lib/libtessera_examples.so
work=$(mktemp -d)
prefix=tbench-$$-
hosts=(scheduler w1 w2 client)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill -9 "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  for ns in "${hosts[@]}" switch; do ip netns del "$prefix$ns" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
[[ $(id -u) -eq 0 ]] || { echo "bench/netns/run.sh: network namespaces need root" >&2; exit 2; }

ip netns add "${prefix}switch"
ip -n "${prefix}switch" link add br0 type bridge
ip -n "${prefix}switch" link set br0 up
i=0
for host in "${hosts[@]}"; do
  i=$((i + 1))
  ip netns add "$prefix$host"
  ip -n "${prefix}switch" link add "port$i" type veth peer name eth0 netns "$prefix$host"
  ip -n "${prefix}switch" link set "port$i" master br0
  ip -n "${prefix}switch" link set "port$i" up
  ip -n "$prefix$host" addr add "10.231.0.$i/24" dev eth0
  ip -n "$prefix$host" link set eth0 up
  ip -n "$prefix$host" link set lo up
done
in_ns() { local host=$1; shift; ip netns exec "$prefix$host" "$@"; }
# In the background, as itself (ip netns exec execs it), so that $! is the program's pid to stop.
spawn_in() { local host=$1 log=$2; shift 2; ip netns exec "$prefix$host" "$@" >"$log" 2>&1 & pids+=($!); }

for who in scheduler worker client; do "$bin/tessera" keygen --out "$work/$who" >/dev/null; done
key() { cat "$work/$1.pub"; }
address=tcp://10.231.0.1:7070
cat >"$work/client.toml" <<TOML
[client]
scheduler = "$address"
[security]
$( [[ "${PLAIN:-0}" == 1 ]] || printf '%s\n' 'public_key_file = "client.pub"' 'secret_key_file = "client.key"' \
  "scheduler_public_key = \"$(key scheduler)\"")
TOML
# The nodes' [security]: CURVE with the keys made above, or (PLAIN=1) none, accepted beyond loopback.
security() {
  if [[ "${PLAIN:-0}" == 1 ]]; then echo "allow_insecure = true"; return; fi
  echo "curve = true"
  echo "secret_key_file = \"$1.key\""
  echo "public_key_file = \"$1.pub\""
  [[ $1 == worker ]] && echo "scheduler_public_key = \"$(key scheduler)\""
  if [[ $1 == worker ]]; then echo "authorized_keys = [\"$(key worker)\"]"
  else echo "authorized_keys = [\"$(key worker)\", \"$(key client)\"]"; fi
}
cat >"$work/scheduler.toml" <<TOML
[node]
name = "scheduler"
role = "scheduler"
data_dir = "$work/store"
[scheduler]
listen = "$address"
[plugins]
paths = ["$plugin", "$examples"]
[security]
$(security scheduler)
TOML
for w in w1 w2; do
  cat >"$work/$w.toml" <<TOML
[node]
name = "$w"
role = "worker"
[worker]
scheduler = "$address"
listen = "tcp://*:0"
threads_per_worker = 2
[plugins]
paths = ["$plugin", "$examples"]
[security]
$(security worker)
TOML
done
cli() { in_ns client "$bin/tessera" --client-config "$work/client.toml" "$@"; }
workers_joined() { cli status --json 2>/dev/null | grep -o '"workers":[0-9]*' | cut -d: -f2; }

bench_args=(--tasks "${TASKS:-200000}" --latency-samples "${SAMPLES:-2000}" --chunks "${CHUNKS:-32}"
  --stream-sets "${SETS:-200000}" --repeat "${REPEAT:-3}")
plain=""; [[ "${PLAIN:-0}" == 1 ]] && plain=" (plain, no CURVE)"
label() { sed "s/^{/{\"network\":\"$1\",/"; }
# Loopback first, with nothing else running: the same bench, its own nodes on 127.0.0.1.
"$bin/tessera-bench-remote" --worker-processes 2 --threads 2 "${bench_args[@]}" | label "loopback"

spawn_in scheduler "$work/scheduler.log" "$bin/tessera-node" --config "$work/scheduler.toml"
for w in w1 w2; do spawn_in "$w" "$work/$w.log" "$bin/tessera-node" --config "$work/$w.toml"; done
for _ in $(seq 600); do [[ "$(workers_joined)" == 2 ]] && break; sleep 0.05; done
[[ "$(workers_joined)" == 2 ]] || { echo "the workers did not join" >&2; cat "$work"/*.log >&2; exit 1; }

in_ns client "$bin/tessera-bench-remote" --scheduler "$address" --client-config "$work/client.toml" \
  --expect-workers 2 "${bench_args[@]}" | label "namespaces$plain, 0 ms added"

# Every packet delayed once on its way (so a round trip between two hosts gains twice the delay): by tc
# netem on each host's egress where the kernel has it, else by tests/tools/link_shaper on each host's
# INPUT (an NFQUEUE fed by iptables; on OUTPUT, TCP small queues would throttle the sender).
shapers=()
slow_down() {
  local host=$1 delay_ms=$2
  if in_ns "$host" tc qdisc replace dev eth0 root netem delay "${delay_ms}ms" 2>/dev/null; then
    shaped_by="tc netem"; return
  fi
  spawn_in "$host" "$work/shaper-$host.log" "$bin/link_shaper" --delay-ms "$delay_ms"
  shapers+=($!)
  for _ in $(seq 200); do grep -q ready "$work/shaper-$host.log" && break; sleep 0.05; done
  grep -q ready "$work/shaper-$host.log" || { cat "$work/shaper-$host.log" >&2; return 1; }
  in_ns "$host" iptables -A INPUT -i eth0 -j NFQUEUE --queue-num 0 --queue-bypass
  shaped_by="link_shaper (NFQUEUE; no sch_netem in this kernel)"
}
restore() {
  for host in "${hosts[@]}"; do
    in_ns "$host" tc qdisc del dev eth0 root 2>/dev/null || true
    in_ns "$host" iptables -F INPUT 2>/dev/null || true
  done
  for pid in "${shapers[@]}"; do kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; done
  shapers=()
}
for delay_ms in 1 5; do
  shaped=1
  for host in "${hosts[@]}"; do slow_down "$host" "$delay_ms" || shaped=0; done
  if [[ $shaped == 1 ]]; then
    in_ns client "$bin/tessera-bench-remote" --scheduler "$address" --client-config "$work/client.toml" \
      --expect-workers 2 "${bench_args[@]}" | label "namespaces$plain, $delay_ms ms added by $shaped_by"
  else
    echo "{\"network\":\"namespaces, $delay_ms ms added\",\"skipped\":\"neither tc netem nor link_shaper\"}"
  fi
  restore
done

# A stream runs; the scheduler's link goes down for 5 s; from its healing, how long until a new result is
# stored (the workers reconnect and deliver). Counted from inside the scheduler's namespace, which the
# partition does not cut off from itself.
"$bin/embarrassingly_parallel" --sets 20000 --params-csv "$work/params.csv" >/dev/null
spawn_in client "$work/push.log" "$bin/tessera" --client-config "$work/client.toml" --reconnect-timeout 60 \
  stream push --simulation costly_simulation --input "$work/params.csv"
stored() {
  in_ns scheduler "$bin/tessera" --client-config "$work/client.toml" --timeout 1 results --stream "$1" \
    --format count 2>/dev/null || echo -1
}
stream=""
for _ in $(seq 600); do
  stream=$(tr '\r' '\n' <"$work/push.log" | sed -n 's/^stream \([0-9]*\):.*/\1/p' | head -n 1)
  [[ -n "$stream" ]] && (($(stored "$stream") > 500)) && break
  sleep 0.05
done
ip -n "${prefix}switch" link set port1 down
sleep 4.5
count_in_partition=$(stored "$stream")
sleep 0.5
ip -n "${prefix}switch" link set port1 up
healed=$(date +%s.%N)
result=timeout
while (($(echo "$(date +%s.%N) - $healed < 60" | bc) == 1)); do
  if (($(stored "$stream") > count_in_partition)); then
    result=$(echo "$(date +%s.%N) - $healed" | bc)
    break
  fi
  sleep 0.02
done
echo "{\"bench\":\"partition_heal\",\"network\":\"namespaces\",\"partitioned\":\"scheduler\",\"partition_seconds\":5,\"stored_in_partition\":$count_in_partition,\"seconds_to_first_new_result\":\"$result\"}"
