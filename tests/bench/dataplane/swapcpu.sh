#!/usr/bin/env bash
# CPU time of the fleetgate proxy per table swap, without load: fleetgate-proxy (GOMAXPROCS=1,
# pinned to core 0, as run.sh runs it) serves genconfig.py's table of HOSTS hostnames and is
# swapped SWAPS times (by rename; SWAP_CHANGE_HOSTS, SWAP_DISTINCT_ROUTES as in table.sh). For each
# swap: the process's CPU time (utime+stime, 10 ms ticks) from the rename to its "config reloaded"
# line, and in the 1.5 s after it, and the 2 s after the last (the release of the swaps' garbage
# to the system, once reloads pause); at the end the mean and the peak memory. With requests
# beside it, this is the core a swap takes from them: BenchmarkReload100k's cpu-ms/op leaves out
# the file's reading, the release and its page faults.
# FG_BIN measures a prebuilt fleetgate-proxy.
set -euo pipefail
cd "$(dirname "$0")/../../.."
HOSTS=${HOSTS:-100000} SWAPS=${SWAPS:-6}
WORK=$(mktemp -d)
PID=
cleanup() { if [ -n "$PID" ]; then kill "$PID" 2>/dev/null || true; wait "$PID" 2>/dev/null || true; fi; rm -rf "$WORK"; }
trap cleanup EXIT
if [ -n "${FG_BIN:-}" ]; then cp "$FG_BIN" "$WORK/fleetgate-proxy"; else go build -o "$WORK/fleetgate-proxy" ./dataplane/cmd/fleetgate-proxy; fi
gen() { CHANGE_HOSTS=${SWAP_CHANGE_HOSTS:-} DISTINCT_ROUTES=${SWAP_DISTINCT_ROUTES:-} python3 tests/bench/dataplane/genconfig.py "$HOSTS" 18091 18090 "$1"; }
for v in 1 2 3; do gen "$v" >"$WORK/v$v"; done
cp "$WORK/v1" "$WORK/fg.json"
GOMAXPROCS=1 taskset -c 0 "$WORK/fleetgate-proxy" -config "$WORK/fg.json" -address 127.0.0.1 \
	-denied-endpoint-cidrs= -watch 100ms 2>"$WORK/log" &
PID=$!
for _ in $(seq 1200); do grep -q '"serving"' "$WORK/log" && break; sleep 0.05; done
sleep 2
reloads() { grep -c '"config reloaded"' "$WORK/log" || true; }
ticks() { awk '{print $14 + $15}' "/proc/$PID/stat"; }
hz=$(getconf CLK_TCK) v=2 sum=0
for i in $(seq "$SWAPS"); do
	before=$(reloads) t0=$(ticks)
	cp "$WORK/v$v" "$WORK/next"; mv "$WORK/next" "$WORK/fg.json"; v=$((5 - v))
	for _ in $(seq 3000); do [ "$(reloads)" -gt "$before" ] && break; sleep 0.01; done
	t1=$(ticks); sleep 1.5; t2=$(ticks)
	sum=$((sum + t2 - t0))
	took=$(grep '"config reloaded"' "$WORK/log" | tail -1 | sed -n 's/.*"took":"\([^"]*\)".*/\1/p')
	echo "swap $i: took $took, CPU $(((t1 - t0) * 1000 / hz)) ms to the reload + $(((t2 - t1) * 1000 / hz)) ms after"
done
# The garbage goes back to the system once reloads pause for 2 s (releaseQuiet): that release's
# CPU counts too, spread over the swaps.
t0=$(ticks); sleep 2; t1=$(ticks); sum=$((sum + t1 - t0))
echo "after the last swap: CPU $(((t1 - t0) * 1000 / hz)) ms more"
echo "hosts=$HOSTS CPU per swap $((sum * 1000 / hz / SWAPS)) ms (mean of $SWAPS); $(awk '/VmHWM|VmRSS/ {sub(":", "", $1); printf "%s=%d KiB ", $1, $2}' "/proc/$PID/status")"
