#!/usr/bin/env python3
"""Turns the raw benchmark lines into results.md and results.png."""
import json
import os
import sys

work, out = sys.argv[1], sys.argv[2]
rows = [l.split() for l in open(os.path.join(work, "wrk.txt")) if l.strip()]
fixed = {}
for line in open(os.path.join(work, "fixed.txt")):
    name, js = line.split(" ", 1)
    fixed[name] = json.loads(js)
swaps = open(os.path.join(work, "swaps.txt")).read().strip() if os.path.exists(os.path.join(work, "swaps.txt")) else ""

def ms(v):
    # wrk prints latencies with units.
    for unit, f in (("us", 1e-3), ("ms", 1.0), ("s", 1e3)):
        if v.endswith(unit):
            return float(v[: -len(unit)]) * f
    return float(v)

side = [r for r in rows if r[0] in ("fleetgate", "nginx", "haproxy", "caddy")]
nginx_rps = next(float(r[2]) for r in side if r[0] == "nginx")
nginx_cpu = next(float(r[4]) for r in side if r[0] == "nginx") or 1
load = open(os.path.join(work, "load.txt")).read().strip() if os.path.exists(os.path.join(work, "load.txt")) else ""
lines = ["# Dataplane benchmark", "",
         "Each proxy pinned to one core (GOMAXPROCS=1 for Go), wrk and the nginx backend on the other; "
         "upstream keepalive on, logs off, 2-byte body. The machine is shared: rps moves with its load "
         "(at the end: `" + load + "`); CPU time per request is the steadier comparison.", "",
         "| proxy | max rps (wrk) | × nginx | wrk p99 ms | CPU µs/req | nginx CPU ÷ this | errors | p99 ms at fixed rate | fixed-rate errors |",
         "|---|---|---|---|---|---|---|---|---|"]
for r in side:
    f = fixed.get(r[0], {})
    lines.append(f"| {r[0]} | {float(r[2]):.0f} | {float(r[2]) / nginx_rps:.2f} | {ms(r[3]):.2f} | {r[4]} | {nginx_cpu / max(float(r[4]), 0.1):.2f} | {r[5]} | "
                 f"{f.get('p99_ms', float('nan')):.2f} @ {f.get('rate', '-')} rps | {f.get('errors', '-')} |")
lines += ["", "## fleetgate by route table size", "", "| hostnames | rps | × 1 hostname | p99 ms | CPU µs/req | errors |", "|---|---|---|---|---|---|"]
by_hosts = [r for r in rows if r[0] == "fleetgate-hosts"]
base = float(by_hosts[0][2]) if by_hosts else 1
for r in by_hosts:
    lines.append(f"| {r[1]} | {float(r[2]):.0f} | {float(r[2]) / base:.2f} | {ms(r[3]):.2f} | {r[4]} | {r[5]} |")
for r in rows:
    if r[0] == "fleetgate-swap":
        lines += ["", f"## Table swaps under load ({r[1]} hostnames)", "",
                  f"{swaps}; {float(r[2]):.0f} rps during the swaps; errors: **{r[5]}**"]
open(os.path.join(out, "results.md"), "w").write("\n".join(lines) + "\n")
print("\n".join(lines))

try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    print("matplotlib missing: no plot", file=sys.stderr)
    sys.exit(0)
fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4))
a.bar([r[0] for r in side], [float(r[2]) for r in side], color="steelblue")
a.set_title("max requests/s, one core")
a.set_ylabel("rps")
a.bar_label(a.containers[0], fmt="%.0f")
# CPU per request rather than rps: on a shared machine rps follows the neighbours' load.
b.plot([int(r[1]) for r in by_hosts], [float(r[4]) for r in by_hosts], marker="o")
b.set_xscale("log")
b.set_ylim(bottom=0)
b.set_ylabel("proxy CPU µs per request")
b.set_title("fleetgate cost by hostnames in the table")
b.set_xlabel("hostnames")
fig.tight_layout()
fig.savefig(os.path.join(out, "results.png"), dpi=100)
