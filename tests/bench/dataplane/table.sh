#!/usr/bin/env bash
# Memory and swap time of the fleetgate proxy's host table, without load: fleetgate-proxy
# (GOMAXPROCS=1, pinned to core 0, as run.sh runs it) serves genconfig.py's table of 1 and of HOSTS
# hostnames; for each, its resident memory (VmRSS; VmHWM is the peak) once the table is served and
# after two swaps (each a new version of the file, by rename; SWAP_CHANGE_HOSTS=1: every host
# changes; SWAP_DISTINCT_ROUTES=1: every host's routes are its own, in every version), and the time each swap took ("took" of the proxy's "config reloaded" lines). Prints one
# line per table size and the memory per hostname above the 1-hostname process.
# FG_BIN measures a prebuilt fleetgate-proxy (a baseline built from another commit, say).
set -euo pipefail
cd "$(dirname "$0")/../../.."
HOSTS=${HOSTS:-100000}
WORK=$(mktemp -d)
PID=
cleanup() { if [ -n "$PID" ]; then kill "$PID" 2>/dev/null || true; wait "$PID" 2>/dev/null || true; fi; rm -rf "$WORK"; }
trap cleanup EXIT
if [ -n "${FG_BIN:-}" ]; then cp "$FG_BIN" "$WORK/fleetgate-proxy"; else go build -o "$WORK/fleetgate-proxy" ./dataplane/cmd/fleetgate-proxy; fi
reloads() { grep -c '"config reloaded"' "$WORK/log" || true; }
mem() { awk '/VmRSS|VmHWM/ {sub(":", "", $1); printf "%s=%d KiB ", $1, $2}' "/proc/$PID/status"; }
rss_kib() { awk '/VmRSS/ {print $2}' "/proc/$PID/status"; }
declare -A base
for n in 1 "$HOSTS"; do
	gen() { CHANGE_HOSTS=${SWAP_CHANGE_HOSTS:-} DISTINCT_ROUTES=${SWAP_DISTINCT_ROUTES:-} python3 tests/bench/dataplane/genconfig.py "$n" 18091 18090 "$1"; }
	gen 1 >"$WORK/fg.json"
	GOMAXPROCS=1 taskset -c 0 "$WORK/fleetgate-proxy" -config "$WORK/fg.json" -address 127.0.0.1 \
		-denied-endpoint-cidrs= -watch 100ms 2>"$WORK/log" &
	PID=$!
	for _ in $(seq 1200); do grep -q '"serving"' "$WORK/log" && break; sleep 0.05; done
	sleep 1
	loaded=$(mem) loaded_kib=$(rss_kib)
	for v in 2 3; do
		gen "$v" >"$WORK/next"
		before=$(reloads)
		mv "$WORK/next" "$WORK/fg.json"
		for _ in $(seq 1200); do [ "$(reloads)" -gt "$before" ] && break; sleep 0.05; done
	done
	# The proxy gives a reload's garbage back once reloads pause for 2 s (releaseQuiet).
	sleep 3
	swapped=$(mem) swapped_kib=$(rss_kib)
	took=$(sed -n 's/.*"took":"\([^"]*\)".*/\1/p' "$WORK/log" | paste -sd, -)
	kill "$PID"; wait "$PID" 2>/dev/null || true; PID=
	if [ "$n" = 1 ]; then
		base[loaded]=$loaded_kib base[swapped]=$swapped_kib
		echo "hosts=1 loaded: ${loaded}swapped: ${swapped}swaps took: $took"
		continue
	fi
	per() { awk -v a="$1" -v b="$2" -v n="$n" 'BEGIN {printf "%.0f", (a - b) * 1024 / n}'; }
	echo "hosts=$n loaded: ${loaded}swapped: ${swapped}swaps took: $took; bytes/host above 1 host: loaded $(per "$loaded_kib" "${base[loaded]}"), swapped $(per "$swapped_kib" "${base[swapped]}")"
done
