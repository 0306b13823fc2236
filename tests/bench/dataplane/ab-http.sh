#!/usr/bin/env bash
# A/B of two fleetgate-proxy binaries beside nginx on plain HTTP/1.1 keepalive, one hostname: the
# rows of issue 22 that run.sh measures for one binary (max rps with CPU µs per request, p99 at a
# fixed rate of half nginx's max), with both binaries in every round so that a change is compared
# with its base under the same neighbours. Same set-up as run.sh: each proxy pinned to core 0
# (fleetgate with GOMAXPROCS=1, nginx with 1 worker), wrk/h2load and an nginx backend on core 1.
#   A=/tmp/fg-main B=/tmp/fg-after [REPS=5 DUR=10s CONNS=32 RATE=…] bash tests/bench/dataplane/ab-http.sh
# Prints one line per measurement ("max NAME rps p99 cpu_us errors load1", "fixed NAME p99_ms
# achieved errors") and the medians with each binary's ratio to nginx per round.
set -euo pipefail
cd "$(dirname "$0")/../../.."
. tests/bench/dataplane/lib.sh
: "${A:?binary A}" "${B:?binary B}"
REPS=${REPS:-5} DUR=${DUR:-10s} CONNS=${CONNS:-32}
BE_PORT=18180 FG_PORT=18181 NGX_PORT=18182
WORK=$(mktemp -d)
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done; rm -rf "$WORK"; }
trap cleanup EXIT
start_backend_and_nginx_conf
python3 tests/bench/dataplane/genconfig.py 1 $FG_PORT $BE_PORT >"$WORK/fg.json"

start() { # NAME → PID, PORT
	case $1 in
	A | B)
		local bin=$A
		[ "$1" = B ] && bin=$B
		GOMAXPROCS=1 taskset -c 0 "$bin" -config "$WORK/fg.json" -address 127.0.0.1 -denied-endpoint-cidrs= 2>"$WORK/fg-$1.log" &
		PID=$! PORT=$FG_PORT ;;
	nginx) taskset -c 0 nginx -p "$WORK/nginx" -c "$WORK/nginx/nginx.conf" & PID=$! PORT=$NGX_PORT ;;
	esac
	PIDS+=($PID)
	wait_port $PORT
	sleep 0.2
}
url="http://127.0.0.1"
max() { # NAME
	taskset -c 1 wrk -t1 -c"$CONNS" -d2s -H "Host: host0.example.com" "$url:$PORT/" >/dev/null
	local t0 out t1; t0=$(cpu_ticks "$PID")
	out=$(taskset -c 1 wrk -t1 -c"$CONNS" -d"$DUR" --latency -H "Host: host0.example.com" "$url:$PORT/")
	t1=$(cpu_ticks "$PID")
	awk -v name="$1" -v t="$((t1 - t0))" -v hz="$(getconf CLK_TCK)" -v load="$(cut -d' ' -f1 /proc/loadavg)" '
		/Requests\/sec/ {rps=$2} /requests in/ {n=$1} $1=="99%" {p99=$2}
		/Non-2xx/ {e+=$NF} /Socket errors/ {gsub(",",""); e+=$4+$6+$8+$10}
		END {printf "max %s %.0f %s %.2f %d %s\n", name, rps, p99, t/hz*1e6/n, e, load}' <<<"$out" | tee -a "$WORK/max.txt"
}
fixed() { # NAME RATE
	local per=$((($2 + CONNS - 1) / CONNS))
	rm -f "$WORK/h2load.log"
	taskset -c 1 h2load --h1 -c "$CONNS" --rps 100 -D 1 -H ":authority: host0.example.com" "$url:$PORT/" >/dev/null 2>&1 || true
	taskset -c 1 h2load --h1 -c "$CONNS" --rps "$per" -D "${DUR%s}" --log-file "$WORK/h2load.log" \
		-H ":authority: host0.example.com" "$url:$PORT/" >/dev/null 2>&1 || true
	sort -n -k3 "$WORK/h2load.log" | awk -v name="$1" '{lat[NR]=$3/1000; e+=($2 !~ /^2/)}
		END {printf "fixed %s %.3f %d %d\n", name, lat[int(0.99*(NR-1))+1], NR, e}' | tee -a "$WORK/fixed.txt"
}
for ((r = 0; r < REPS; r++)); do
	for name in $(rotated "A B nginx" $r); do start "$name"; max "$name"; stop "$PID"; done
done
RATE=${RATE:-$(awk '$2=="nginx" {print int($3)}' "$WORK/max.txt" | sort -n | awk '{v[NR]=$1} END {print int(v[int((NR+1)/2)]/2)}')}
echo "fixed rate: $RATE rps"
for ((r = 0; r < REPS; r++)); do
	for name in $(rotated "A B nginx" $r); do start "$name"; fixed "$name" "$RATE"; stop "$PID"; done
done
python3 - "$WORK/max.txt" "$WORK/fixed.txt" "$REPS" <<'PY'
import statistics as st, sys
maxr = [l.split() for l in open(sys.argv[1])]
fixr = [l.split() for l in open(sys.argv[2])]
reps = int(sys.argv[3])
def col(rows, name, i): return [float(r[i]) for r in rows if r[1] == name]
for name in ("A", "B"):
    rps, ngx = col(maxr, name, 2), col(maxr, "nginx", 2)
    cpu, ncpu = col(maxr, name, 4), col(maxr, "nginx", 4)
    p99, np99 = col(fixr, name, 2), col(fixr, "nginx", 2)
    ratio = [a / b for a, b in zip(rps, ngx)]
    cratio = [a / b for a, b in zip(cpu, ncpu)]
    pratio = [a / b for a, b in zip(p99, np99)]
    print(f"{name}: rps {st.median(rps):.0f} (nginx {st.median(ngx):.0f}), per-round ratio median {st.median(ratio):.3f} "
          f"({min(ratio):.2f}-{max(ratio):.2f}); CPU/req {st.median(cpu):.2f} vs {st.median(ncpu):.2f} µs, ratio {st.median(cratio):.3f}; "
          f"p99 at fixed rate {st.median(p99):.2f} vs {st.median(np99):.2f} ms, ratio {st.median(pratio):.2f} ({min(pratio):.2f}-{max(pratio):.2f})")
PY
