# Included from the top-level Makefile: `make bench-dataplane` runs the side-by-side proxy benchmark
# and writes tests/bench/results/results.md and results.png (results-https.md, results-h2.md for the TLS and
# HTTP/2 cases). CASES, DUR, CONNS, HOSTS, REPS, SWAP_DUR, H2_CONNS and H2_STREAMS can be overridden (README.md).
.PHONY: bench-dataplane bench-dataplane-go bench-deps
bench-dataplane: bench-deps ## Benchmark the fleetgate proxy against nginx, haproxy and caddy; table + plot in tests/bench/results.
	bash tests/bench/dataplane/run.sh

BENCH_TOOLS := nginx haproxy wrk caddy h2load
bench-deps: ## Install the peers and load generators of the benchmarks (Debian packages).
	@missing=""; for t in $(BENCH_TOOLS); do command -v $$t >/dev/null || missing=1; done; \
	  python3 -c 'import matplotlib' 2>/dev/null || missing=1; \
	  if [ -n "$$missing" ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
	    nginx-light haproxy wrk caddy nghttp2-client python3-matplotlib; fi

bench-dataplane-go: ## Go micro-benchmarks of the proxy (route lookup, round trip).
	go test ./dataplane/proxy -run XXX -bench . -benchmem
