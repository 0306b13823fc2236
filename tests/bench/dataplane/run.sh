#!/usr/bin/env bash
# Side-by-side benchmark of the fleetgate proxy against nginx and haproxy (caddy when installed):
# same backend, upstream keepalive on, logs off, each proxy pinned to core 0, load generator and
# backend on core 1, every measurement repeated in rounds (REPS) and reported as medians. Writes
# results.md and results.png under tests/bench/results/. The backend is on loopback, which the
# proxy denies by default: fleetgate runs with -denied-endpoint-cidrs= (none).
# CASES picks what runs: "http" (the plain-HTTP cases → results.md, results.png), "https"
# (fleetgate against nginx over TLS, keepalive and a new handshake per request → results-https.md)
# and "h2" (fleetgate against nginx under h2load: HTTP/2 over TLS and h2c → results-h2.md).
# FG_BIN measures a prebuilt fleetgate-proxy instead of this tree's (a baseline, say).
# Needs: nginx, haproxy, wrk, caddy, h2load, matplotlib (`make bench-deps` installs them).
set -euo pipefail
cd "$(dirname "$0")/../../.."
ROOT=$PWD
. tests/bench/dataplane/lib.sh
OUT=${OUT:-$ROOT/tests/bench/results}
WORK=$(mktemp -d)
DUR=${DUR:-10s}
CONNS=${CONNS:-32}
HOSTS=${HOSTS:-"1 1000 10000 100000"}
CASES=${CASES:-"http https h2"}
BE_PORT=18080 FG_PORT=18081 NGX_PORT=18082 HAP_PORT=18083 CADDY_PORT=18084 FG_TLS_PORT=18085 NGX_TLS_PORT=18086
NGX_H2C_PORT=18087
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done; rm -rf "$WORK"; }
trap cleanup EXIT
mkdir -p "$OUT"
for tool in nginx haproxy wrk taskset python3; do
	command -v "$tool" >/dev/null || { echo "missing $tool (apt-get install nginx-light haproxy wrk)" >&2; exit 1; }
done

if [ -n "${FG_BIN:-}" ]; then cp "$FG_BIN" "$WORK/fleetgate-proxy"; else go build -o "$WORK/fleetgate-proxy" ./dataplane/cmd/fleetgate-proxy; fi
go build -o "$WORK/loadgen" ./tests/bench/dataplane/loadgen


start_backend_and_nginx_conf
cat >"$WORK/haproxy.cfg" <<HAP
global
	nbthread 1
defaults
	mode http
	timeout connect 5s
	timeout client 30s
	timeout server 30s
	http-reuse always
frontend fe
	bind 127.0.0.1:$HAP_PORT
	default_backend be
backend be
	server s1 127.0.0.1:$BE_PORT
HAP

# run_wrk NAME PORT HOST PID [HOSTS [WRK_ARGS]] → appends "name hosts rps p99 cpu_us_per_req errors" to $WORK/wrk.txt.
# SCHEME=https speaks TLS; CLOSE=1 sends Connection: close, so every request opens a connection.
run_wrk() {
	local name=$1 port=$2 host=$3 pid=$4 hosts=${5:-1} extra=${6:-}
	local hdr=(-H "Host: $host") url="${SCHEME:-http}://127.0.0.1:$port/"
	if [ -n "${CLOSE:-}" ]; then hdr+=(-H "Connection: close"); fi
	taskset -c 1 wrk -t1 -c"$CONNS" -d2s "${hdr[@]}" "$url" >/dev/null # warm up
	local t0; t0=$(cpu_ticks "$pid")
	local out; out=$(taskset -c 1 wrk -t1 -c"$CONNS" -d"$DUR" --latency $extra "${hdr[@]}" "$url")
	local t1; t1=$(cpu_ticks "$pid")
	local rps reqs errs p99
	rps=$(awk '/Requests\/sec/ {print $2}' <<<"$out")
	reqs=$(awk '/requests in/ {print $1}' <<<"$out")
	errs=$(awk '/Non-2xx/ {n+=$NF} /Socket errors/ {gsub(",","");n+=$4+$6+$8+$10} END {print n+0}' <<<"$out")
	p99=$(awk '$1=="99%" {print $2}' <<<"$out")
	local hz; hz=$(getconf CLK_TCK)
	local cpu; cpu=$(python3 -c "print(round(($t1-$t0)/$hz*1e6/max($reqs,1),1))")
	echo "$name $hosts $rps $p99 $cpu $errs" | tee -a "$WORK/wrk.txt"
}

start_fleetgate() { # $1 hostnames; TLS_PORT, TLS_CERT and TLS_KEY add the HTTPS listener
	DISTINCT_ROUTES=${SWAP_DISTINCT_ROUTES:-} python3 tests/bench/dataplane/genconfig.py "$1" $FG_PORT $BE_PORT >"$WORK/fg.json"
	GOMAXPROCS=1 taskset -c 0 "$WORK/fleetgate-proxy" -config "$WORK/fg.json" -address 127.0.0.1 -watch 100ms -drain-timeout 2s -denied-endpoint-cidrs= 2>"$WORK/fg.log" &
	FG_PID=$!
	PIDS+=($FG_PID)
	wait_port $FG_PORT
}

# The machine is shared and its load drifts over minutes, so no proxy is measured in one stretch:
# every measurement is repeated REPS times in rounds, each round starting each proxy afresh and
# taking them in a rotated order, and the report gives medians (and the spread).
REPS=${REPS:-5}
PROXIES="fleetgate nginx haproxy"
if command -v caddy >/dev/null; then
	PROXIES="$PROXIES caddy"
	printf ':%s {\n\treverse_proxy 127.0.0.1:%s\n}\n' $CADDY_PORT $BE_PORT >"$WORK/Caddyfile"
fi
# start_proxy NAME sets PID and PORT.
start_proxy() {
	case $1 in
	fleetgate) start_fleetgate 1; PID=$FG_PID PORT=$FG_PORT ;;
	nginx) taskset -c 0 nginx -p "$WORK/nginx" -c "$WORK/nginx/nginx.conf" & PID=$! PORT=$NGX_PORT ;;
	fleetgate-tls)
		TLS_PORT=$FG_TLS_PORT TLS_CERT=$WORK/cert.pem TLS_KEY=$WORK/key.pem start_fleetgate 1
		PID=$FG_PID PORT=$FG_TLS_PORT ;;
	nginx-tls) taskset -c 0 nginx -p "$WORK/nginx-tls" -c "$WORK/nginx-tls/nginx.conf" & PID=$! PORT=$NGX_TLS_PORT ;;
	nginx-h2) taskset -c 0 nginx -p "$WORK/nginx-h2" -c "$WORK/nginx-h2/nginx.conf" & PID=$! PORT=$NGX_TLS_PORT ;;
	haproxy) taskset -c 0 haproxy -f "$WORK/haproxy.cfg" -db & PID=$! PORT=$HAP_PORT ;;
	caddy)
		GOMAXPROCS=1 taskset -c 0 caddy run --config "$WORK/Caddyfile" --adapter caddyfile >/dev/null 2>&1 &
		PID=$! PORT=$CADDY_PORT ;;
	esac
	PIDS+=($PID)
	wait_port $PORT
	sleep 0.2
}

: >"$WORK/wrk.txt"
on() { [[ " $CASES " == *" $1 "* ]]; }

if on https || on h2; then
	# One ECDSA P-256 certificate for both proxies; TLS 1.3 with the same suite on both (nginx would
	# follow OpenSSL's client preference, AES-256; crypto/tls picks AES-128 on AES-NI machines).
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj /CN=host0.example.com \
		-addext subjectAltName=DNS:*.example.com -keyout "$WORK/key.pem" -out "$WORK/cert.pem" 2>/dev/null
fi

if on https; then
	nginx_conf "$WORK/nginx-tls" "upstream be { server 127.0.0.1:$BE_PORT; keepalive 128; keepalive_requests 1000000; }
	ssl_certificate $WORK/cert.pem; ssl_certificate_key $WORK/key.pem;
	ssl_protocols TLSv1.2 TLSv1.3; ssl_conf_command Ciphersuites TLS_AES_128_GCM_SHA256;
	ssl_session_cache shared:SSL:10m; ssl_session_tickets on; ssl_buffer_size 16k;
	server { listen 127.0.0.1:$NGX_TLS_PORT ssl backlog=4096; server_name host0.example.com; keepalive_requests 1000000;
		location / { proxy_pass http://be; proxy_http_version 1.1; proxy_set_header Connection \"\"; } }"
	echo "== HTTPS: keepalive and a new handshake per request (wrk -c$CONNS, $DUR), $REPS paired rounds"
	for ((r = 0; r < REPS; r++)); do
		for name in $(rotated "fleetgate nginx" $r); do
			start_proxy "$name-tls"
			SCHEME=https run_wrk "$name-https" "$PORT" host0.example.com "$PID"
			SCHEME=https CLOSE=1 run_wrk "$name-https-close" "$PORT" host0.example.com "$PID"
			stop "$PID"
		done
	done
fi

# run_h2load NAME URL PID → appends "name streams rps p99 cpu_us_per_req errors load1" to $WORK/h2.txt:
# H2_CONNS connections × H2_STREAMS concurrent streams each, every request's latency logged.
H2_CONNS=${H2_CONNS:-16} H2_STREAMS=${H2_STREAMS:-10}
run_h2load() {
	local name=$1 url=$2 pid=$3
	local args=(-c "$H2_CONNS" -m "$H2_STREAMS" -H ":authority: host0.example.com")
	taskset -c 1 h2load "${args[@]}" -D 2 "$url" >/dev/null 2>&1 || true # warm up
	local load; load=$(cut -d' ' -f1 /proc/loadavg)
	rm -f "$WORK/h2load.log"
	local t0; t0=$(cpu_ticks "$pid")
	local out; out=$(taskset -c 1 h2load "${args[@]}" -D "${DUR%s}" --log-file "$WORK/h2load.log" "$url" 2>&1 || true)
	local t1; t1=$(cpu_ticks "$pid")
	echo "$name $H2_STREAMS $(python3 - "$WORK/h2load.log" "$t1" "$t0" "$(getconf CLK_TCK)" "$load" "$DUR" <<'PY'
import sys
log, t1, t0, hz, load, dur = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5], float(sys.argv[6].rstrip("s"))
lat, errors = [], 0
for line in open(log):
    _, status, micros = line.split()[:3]
    lat.append(int(micros) / 1000)
    errors += not status.startswith("2")
lat.sort()
done = len(lat)
p99 = lat[int(0.99 * (done - 1))] if lat else float("nan")
print(f"{done / dur:.0f} {p99:.2f}ms {(t1 - t0) / hz * 1e6 / max(done, 1):.1f} {errors} {load}")
PY
)" | tee -a "$WORK/h2.txt"
	grep -q "succeeded" <<<"$out" || echo "$out" >&2
}

if on h2; then
	command -v h2load >/dev/null || { echo "missing h2load (apt-get install nghttp2-client)" >&2; exit 1; }
	# nginx 1.22 turns HTTP/2 on per listen (`http2 on` came in 1.25.1): h2 over TLS (ALPN) on one
	# server, h2c with prior knowledge on the other. Its HTTP/2 settings are the defaults, stated:
	# 128 concurrent streams, 16 KiB frames, 64 KiB initial stream window (http2_body_preread_size),
	# 8 KiB response chunks; TLS as in the HTTPS cases.
	nginx_conf "$WORK/nginx-h2" "upstream be { server 127.0.0.1:$BE_PORT; keepalive 128; keepalive_requests 1000000; }
	ssl_certificate $WORK/cert.pem; ssl_certificate_key $WORK/key.pem;
	ssl_protocols TLSv1.2 TLSv1.3; ssl_conf_command Ciphersuites TLS_AES_128_GCM_SHA256;
	ssl_session_cache shared:SSL:10m; ssl_session_tickets on; ssl_buffer_size 16k;
	http2_max_concurrent_streams 128; http2_chunk_size 8k; http2_body_preread_size 64k;
	keepalive_requests 1000000;
	server { listen 127.0.0.1:$NGX_TLS_PORT ssl http2 backlog=4096; server_name host0.example.com;
		location / { proxy_pass http://be; proxy_http_version 1.1; proxy_set_header Connection \"\"; } }
	server { listen 127.0.0.1:$NGX_H2C_PORT http2 backlog=4096; server_name host0.example.com;
		location / { proxy_pass http://be; proxy_http_version 1.1; proxy_set_header Connection \"\"; } }"
	: >"$WORK/h2.txt"
	echo "== HTTP/2: h2load -c$H2_CONNS -m$H2_STREAMS over TLS and h2c ($DUR), $REPS paired rounds"
	for ((r = 0; r < REPS; r++)); do
		for name in $(rotated "fleetgate nginx" $r); do
			if [ "$name" = fleetgate ]; then start_proxy fleetgate-tls; h2c=$FG_PORT; else start_proxy nginx-h2; h2c=$NGX_H2C_PORT; fi
			run_h2load "$name-h2" "https://127.0.0.1:$PORT/" "$PID"
			run_h2load "$name-h2c" "http://127.0.0.1:$h2c/" "$PID"
			stop "$PID"
		done
	done
fi

if on http; then
echo "== max rps (wrk -c$CONNS, $DUR), 1 hostname, $REPS rounds"
for ((r = 0; r < REPS; r++)); do
	for name in $(rotated "$PROXIES" $r); do
		start_proxy "$name"
		run_wrk "$name" "$PORT" host0.example.com "$PID"
		stop "$PID"
	done
done

# p99 at a fixed rate of half nginx's (median) max, for each proxy.
NGX_RPS=$(awk '$1=="nginx" {print int($3)}' "$WORK/wrk.txt" | sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}')
# The load generator shares core 1 with the backend; RATE can be lowered when it cannot keep up.
RATE=${RATE:-$((NGX_RPS / 2))}
echo "== fixed rate $RATE rps, $REPS rounds"
: >"$WORK/fixed.txt"
fixed() { # $1 name, $2 port
	if command -v h2load >/dev/null; then
		# h2load paces each connection (--rps) and logs every request's latency; wrk cannot hold a rate.
		local per=$(((RATE + CONNS - 1) / CONNS))
		rm -f "$WORK/h2load.$1.log" # h2load appends to its log
		taskset -c 1 h2load --h1 -c "$CONNS" --rps "$per" -D "${DUR%s}" --log-file "$WORK/h2load.$1.log" \
			-H ":authority: host0.example.com" "http://127.0.0.1:$2/" >"$WORK/h2load.$1.out" 2>&1 || true
		echo "$1 $(python3 - "$WORK/h2load.$1.log" "$RATE" <<'PY'
import json, sys
lat, errors = [], 0
for line in open(sys.argv[1]):
    _, status, micros = line.split()[:3]
    lat.append(int(micros) / 1000)
    errors += not status.startswith("2")
lat.sort()
print(json.dumps({"p99_ms": lat[int(0.99 * (len(lat) - 1))] if lat else float("nan"), "rate": int(sys.argv[2]),
                  "achieved": len(lat), "errors": errors, "tool": "h2load"}))
PY
)" | tee -a "$WORK/fixed.txt"
	else
		echo "$1 $(taskset -c 1 "$WORK/loadgen" -addr "127.0.0.1:$2" -host host0.example.com -rate $RATE -duration "$DUR" -conns "$CONNS")" | tee -a "$WORK/fixed.txt"
	fi
}
for ((r = 0; r < REPS; r++)); do
	for name in $(rotated "$PROXIES" $r); do
		start_proxy "$name"
		# A short unmeasured stretch at the same rate, so that no proxy is timed from a cold start.
		taskset -c 1 h2load --h1 -c "$CONNS" --rps 100 -D 1 -H ":authority: host0.example.com" "http://127.0.0.1:$PORT/" >/dev/null 2>&1 || true
		fixed "$name" "$PORT"
		stop "$PID"
	done
done

echo "== fleetgate by route table size, $REPS rounds"
for ((r = 0; r < REPS; r++)); do
	for n in $(rotated "$HOSTS" $r); do
		start_fleetgate "$n"
		run_wrk fleetgate-hosts $FG_PORT "host$((n / 2)).example.com" $FG_PID "$n"
		stop $FG_PID
	done
done

n=$(echo $HOSTS | awk '{print $NF}')
echo "== table swaps under load ($n hostnames)"
start_fleetgate "$n"
# Two pre-built versions of the table, swapped in by rename while wrk runs.
# SWAP_CHANGE_HOSTS=1: the two versions differ in every host (each swap decodes and compiles all of
# them); by default in their version alone (a swap scans the file and compiles the listeners only).
# SWAP_DISTINCT_ROUTES=1: every host's routes are its own (genconfig.py's DISTINCT_ROUTES), in the
# table served first too.
CHANGE_HOSTS=${SWAP_CHANGE_HOSTS:-} DISTINCT_ROUTES=${SWAP_DISTINCT_ROUTES:-} python3 tests/bench/dataplane/genconfig.py "$n" $FG_PORT $BE_PORT 2 >"$WORK/fg.v2"
CHANGE_HOSTS=${SWAP_CHANGE_HOSTS:-} DISTINCT_ROUTES=${SWAP_DISTINCT_ROUTES:-} python3 tests/bench/dataplane/genconfig.py "$n" $FG_PORT $BE_PORT 3 >"$WORK/fg.v3"
# Each swap is started once the previous one is served (a paced 100k swap takes seconds), for
# SWAP_DUR; wrk runs as long.
SWAP_DUR=${SWAP_DUR:-20s}
# The steady rate the swaps are compared with: this process, this table, as long, just before
# (a separate run in another process moved by ±15% between runs, more than the swaps did).
DUR=$SWAP_DUR run_wrk fleetgate-steady $FG_PORT "host$((n / 2)).example.com" $FG_PID "$n"
before=$(grep -c '"config reloaded"' "$WORK/fg.log" || true)
(
	sleep 2
	end=$((SECONDS + ${SWAP_DUR%s} - 4)) v=2
	while [ $SECONDS -lt $end ]; do
		applied=$(grep -c '"config reloaded"' "$WORK/fg.log" || true)
		cp "$WORK/fg.v$v" "$WORK/fg.next"; mv "$WORK/fg.next" "$WORK/fg.json"; v=$((5 - v))
		for _ in $(seq 600); do [ "$(grep -c '"config reloaded"' "$WORK/fg.log" || true)" -gt "$applied" ] && break; sleep 0.05; done
		sleep 1
	done
) &
SWAPPER=$!
# A 100k-host swap briefly slows answers; a 10s timeout counts failed requests, not slow ones.
DUR=$SWAP_DUR run_wrk fleetgate-swap $FG_PORT "host$((n / 2)).example.com" $FG_PID "$n" "--timeout 10s"
wait $SWAPPER
sleep 1
took=$(grep '"config reloaded"' "$WORK/fg.log" | tail -n +$((before + 1)) | sed -n 's/.*"took":"\([^"]*\)".*/\1/p' | paste -sd, - || true)
decoded=$(grep '"config reloaded"' "$WORK/fg.log" | tail -n +$((before + 1)) | sed -n 's/.*"decodedHosts":\([0-9]*\).*/\1/p' | paste -sd, - || true)
echo "swaps applied: $(( $(grep -c '"config reloaded"' "$WORK/fg.log") - before )) (each took $took, decoding and compiling paced to share the core; hosts decoded: ${decoded:-all})" | tee "$WORK/swaps.txt"
stop $FG_PID
fi

# The plot needs matplotlib, which may live only in the system Python (python3-matplotlib).
PY=python3
for p in python3 /usr/bin/python3; do if "$p" -c 'import matplotlib' 2>/dev/null; then PY=$p; break; fi; done
uptime >"$WORK/load.txt"
"$PY" tests/bench/dataplane/report.py "$WORK" "$OUT"
