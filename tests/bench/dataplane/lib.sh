# Helpers shared by the dataplane benchmark scripts (sourced).

# A table of 100k hostnames takes seconds to load on a busy shared core: wait up to a minute.
wait_port() { for _ in $(seq 1200); do (exec 3<>/dev/tcp/127.0.0.1/$1) 2>/dev/null && return 0; sleep 0.05; done; echo "port $1 never opened" >&2; return 1; }
nginx_conf() { # $1 dir, $2 http-block body
	mkdir -p "$1"
	cat >"$1/nginx.conf" <<NGX
worker_processes 1;
daemon off;
pid $1/nginx.pid;
error_log $1/error.log;
events { worker_connections 4096; }
http {
	access_log off;
	client_body_temp_path $1; proxy_temp_path $1; fastcgi_temp_path $1; uwsgi_temp_path $1; scgi_temp_path $1;
	$2
}
NGX
}
# CPU ticks of a process and its children (nginx works in its worker, not its master).
cpu_ticks() { local t=0; for p in $1 $(pgrep -P "$1"); do t=$((t + $(awk '{print $14+$15}' "/proc/$p/stat"))); done; echo $t; }
stop() { kill "$1"; wait "$1" 2>/dev/null || true; }
# rotated LIST ROUND prints LIST starting at its (ROUND mod length)th word.
rotated() { local a=($1); local n=${#a[@]} i; for ((i = 0; i < n; i++)); do echo "${a[$(((i + $2) % n))]}"; done; }
# start_backend_and_nginx_conf starts the backend, nginx answering a 2-byte body on core 1 with the
# load generator, at BE_PORT, and writes the config of nginx the proxy (NGX_PORT, upstream keepalive):
# the peer every HTTP/1.1 comparison runs against. Needs WORK and PIDS.
start_backend_and_nginx_conf() {
	nginx_conf "$WORK/backend" "server { listen 127.0.0.1:$BE_PORT backlog=4096; keepalive_requests 1000000; location / { return 200 'ok'; } }"
	taskset -c 1 nginx -p "$WORK/backend" -c "$WORK/backend/nginx.conf" &
	PIDS+=($!)
	wait_port $BE_PORT
	nginx_conf "$WORK/nginx" "upstream be { server 127.0.0.1:$BE_PORT; keepalive 128; keepalive_requests 1000000; }
	server { listen 127.0.0.1:$NGX_PORT backlog=4096; server_name host0.example.com; keepalive_requests 1000000;
		location / { proxy_pass http://be; proxy_http_version 1.1; proxy_set_header Connection \"\"; } }"
}
