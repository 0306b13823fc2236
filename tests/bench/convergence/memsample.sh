#!/usr/bin/env bash
# memsample.sh OUT [METRICS_ADDR]: samples the memory of the operator serving metrics on
# METRICS_ADDR (default 127.0.0.1:6080, the bench's FLEETGATE_METRICS) every 0.5 s until killed,
# one line per sample into OUT, in MB unless named kB: /proc/PID/status VmRSS, RssAnon and RssFile
# (kB), and the Go runtime's own heap_alloc, heap_inuse, heap_idle, heap_released, heap_sys,
# stack_inuse, sys and next_gc (the heap goal; half of it is the live heap after the last
# collection while GOGC is 100 and no soft limit binds), and the goroutines.
set -u
out=$1
addr=${2:-127.0.0.1:6080}
echo "t rss_kb anon_kb file_kb heap_alloc heap_inuse heap_idle heap_released heap_sys stack_inuse sys next_gc goroutines" >"$out"
while true; do
  pid=$(pgrep -f "metrics-bind-address=$addr" | head -1)
  if [ -n "$pid" ]; then
    st=$(awk '/^VmRSS|^RssAnon|^RssFile/{printf "%s ", $2}' "/proc/$pid/status" 2>/dev/null)
    m=$(curl -s --max-time 1 "http://$addr/metrics" | awk '
      /^go_memstats_heap_alloc_bytes /{a=$2} /^go_memstats_heap_inuse_bytes /{b=$2} /^go_memstats_heap_idle_bytes /{c=$2}
      /^go_memstats_heap_released_bytes /{d=$2} /^go_memstats_heap_sys_bytes /{e=$2} /^go_memstats_stack_inuse_bytes /{f=$2}
      /^go_memstats_sys_bytes /{g=$2} /^go_memstats_next_gc_bytes /{h=$2} /^go_goroutines /{i=$2}
      END{printf "%d %d %d %d %d %d %d %d %d", a/1048576,b/1048576,c/1048576,d/1048576,e/1048576,f/1048576,g/1048576,h/1048576,i}')
    echo "$(date +%s.%N | cut -c1-14) $st$m" >>"$out"
  fi
  sleep 0.5
done
