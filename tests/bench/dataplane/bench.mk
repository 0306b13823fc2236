# Included from the top-level Makefile: `make bench-dataplane` runs the side-by-side proxy benchmark
# and writes tests/bench/results/results.md and results.png. DUR, CONNS and HOSTS can be overridden.
.PHONY: bench-dataplane bench-dataplane-go
bench-dataplane: ## Benchmark the fleetgate proxy against nginx and haproxy (needs nginx haproxy wrk).
	bash tests/bench/dataplane/run.sh

bench-dataplane-go: ## Go micro-benchmarks of the proxy (route lookup, round trip).
	go test ./dataplane/proxy -run XXX -bench . -benchmem
