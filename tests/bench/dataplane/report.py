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
lines += ["", "## fleetgate by route table size", "",
          "Run one after another (the 1-hostname table first and again last), so rps follows the machine's load over "
          "the series; the ratios use the mean of the two 1-hostname runs, and CPU per request is the steadier one.", "",
          "| hostnames | rps | rps × 1 hostname | CPU µs/req | CPU × 1 hostname | p99 ms | errors |", "|---|---|---|---|---|---|---|"]
by_hosts = [r for r in rows if r[0] == "fleetgate-hosts"]
again = [r for r in rows if r[0] == "fleetgate-hosts-again"]
ones = [r for r in by_hosts + again if r[1] == "1"]
base_rps = sum(float(r[2]) for r in ones) / len(ones) if ones else 1
base_cpu = sum(float(r[4]) for r in ones) / len(ones) if ones else 1
for r in by_hosts + again:
    label = r[1] + (" (again)" if r[0] == "fleetgate-hosts-again" else "")
    lines.append(f"| {label} | {float(r[2]):.0f} | {float(r[2]) / base_rps:.2f} | {r[4]} | {float(r[4]) / base_cpu:.2f} | {ms(r[3]):.2f} | {r[5]} |")
swap_rows = [r for r in rows if r[0] == "fleetgate-swap"]
for r in swap_rows:
    lines += ["", f"## Table swaps under load ({r[1]} hostnames)", "",
              f"{swaps}; {float(r[2]):.0f} rps during the swaps; errors: **{r[5]}**"]

# The targets, in one place.
fg = next((r for r in side if r[0] == "fleetgate"), None)
largest = max(by_hosts, key=lambda r: int(r[1])) if by_hosts else None
targets = ["", "## Targets", "", "| target | result | met |", "|---|---|---|"]
if fg:
    ratio = float(fg[2]) / nginx_rps
    targets.append(f"| rps ≥ 0.8× nginx | {ratio:.2f}× ({float(fg[2]):.0f} vs {nginx_rps:.0f}) | {'yes' if ratio >= 0.8 else 'no'} |")
fp, npq = fixed.get("fleetgate", {}).get("p99_ms"), fixed.get("nginx", {}).get("p99_ms")
if fp is not None and npq is not None:
    targets.append(f"| p99 at a fixed rate ≤ nginx | {fp:.2f} ms vs {npq:.2f} ms ({fp / npq:.2f}×) | {'yes' if fp <= npq else 'no'} |")
if largest and ones:
    rr, cr = float(largest[2]) / base_rps, float(largest[4]) / base_cpu
    targets.append(f"| rps at {largest[1]} hostnames within 10% of 1 | {rr:.2f}× rps, {cr:.2f}× CPU per request | "
                   f"{'yes' if rr >= 0.9 else 'no'} (rps), {'yes' if cr <= 1.1 else 'no'} (CPU) |")
for r in swap_rows:
    targets.append(f"| 0 errors during swaps | {r[5]} errors, {float(r[2]):.0f} rps meanwhile | {'yes' if r[5] == '0' else 'no'} |")
lines[4:4] = targets[1:] + [""]
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
for r in again:
    b.plot([int(r[1])], [float(r[4])], marker="x", color="gray")
b.set_xscale("log")
b.set_ylim(bottom=0)
b.set_ylabel("proxy CPU µs per request")
b.set_title("fleetgate cost by hostnames in the table")
b.set_xlabel("hostnames")
fig.tight_layout()
fig.savefig(os.path.join(out, "results.png"), dpi=100)
