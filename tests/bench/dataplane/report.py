#!/usr/bin/env python3
"""Turns the raw benchmark lines into results.md and results.png.

Every measurement comes in several rounds (run.sh takes the proxies in rotated order per round);
the tables give the median of the rounds and, for rps, their spread.
"""
import json
import os
import statistics
import sys

work, out = sys.argv[1], sys.argv[2]
rows = [l.split() for l in open(os.path.join(work, "wrk.txt")) if l.strip()]
fixed = {}
if os.path.exists(os.path.join(work, "fixed.txt")):
    for line in open(os.path.join(work, "fixed.txt")):
        name, js = line.split(" ", 1)
        fixed.setdefault(name, []).append(json.loads(js))
swaps = open(os.path.join(work, "swaps.txt")).read().strip() if os.path.exists(os.path.join(work, "swaps.txt")) else ""


def ms(v):
    # wrk prints latencies with units.
    for unit, f in (("us", 1e-3), ("ms", 1.0), ("s", 1e3)):
        if v.endswith(unit):
            return float(v[: -len(unit)]) * f
    return float(v)


def summary(rs):
    """Medians of a group of wrk rounds: rps, p99 ms, CPU µs/req; errors summed; rps spread."""
    rps = [float(r[2]) for r in rs]
    return {"rps": statistics.median(rps), "min": min(rps), "max": max(rps), "n": len(rs),
            "p99": statistics.median(ms(r[3]) for r in rs), "cpu": statistics.median(float(r[4]) for r in rs),
            "errors": sum(int(r[5]) for r in rs)}


def group(name, key=lambda r: r[0]):
    g = {}
    for r in rows:
        if r[0] == name or name is None:
            g.setdefault(key(r), []).append(r)
    return {k: summary(v) for k, v in g.items()}


load = open(os.path.join(work, "load.txt")).read().strip() if os.path.exists(os.path.join(work, "load.txt")) else ""


def https_report():
    """results-https.md: fleetgate against nginx over TLS, keepalive and a new handshake per request.

    Both proxies run in every round (in alternating order), so each round gives a ratio of its own,
    taken under the same load; the table gives the median of those ratios and their spread.
    """
    cases = [("keepalive", "https"), ("new handshake per request (Connection: close)", "https-close")]
    lines = ["# HTTPS benchmark", "",
             "fleetgate (GOMAXPROCS=1) and nginx (1 worker), each pinned to core 0, wrk and the nginx backend on core 1; "
             "TLS 1.3, TLS_AES_128_GCM_SHA256, X25519, one ECDSA P-256 certificate for both. nginx: `ssl_session_cache "
             "shared:SSL:10m`, `ssl_session_tickets on`, `ssl_buffer_size 16k` (defaults); fleetgate: crypto/tls "
             "defaults (session tickets on), full-size records. wrk resumes the session of a connection's "
             "predecessor, so a new connection is mostly a TLS 1.3 resumption (PSK with an X25519 exchange, no "
             "certificate signature) on both. Upstream plain HTTP/1.1 keepalive, 2-byte body. Load at the "
             f"end: `{load}`.", "",
             "| case | proxy | rps, median | rps min–max | × nginx (medians) | × nginx per round: median (min–max) "
             "| wrk p99 ms | CPU µs/req | CPU × nginx | errors |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    found = False
    for label, suffix in cases:
        fg = [r for r in rows if r[0] == "fleetgate-" + suffix]
        ng = [r for r in rows if r[0] == "nginx-" + suffix]
        if not fg or not ng:
            continue
        found = True
        f, n = summary(fg), summary(ng)
        per = sorted(float(a[2]) / float(b[2]) for a, b in zip(fg, ng))
        cpu = sorted(float(a[4]) / float(b[4]) for a, b in zip(fg, ng))
        for name, s, mine in (("fleetgate", f, True), ("nginx", n, False)):
            ratio = f"{s['rps'] / n['rps']:.2f}" if mine else "1.00"
            paired = f"{statistics.median(per):.2f} ({per[0]:.2f}–{per[-1]:.2f})" if mine else "–"
            cpur = f"{statistics.median(cpu):.2f} ({cpu[0]:.2f}–{cpu[-1]:.2f})" if mine else "1.00"
            lines.append(f"| {label} | {name} | {s['rps']:.0f} | {s['min']:.0f}–{s['max']:.0f} | {ratio} | {paired} | "
                         f"{s['p99']:.2f} | {s['cpu']:.1f} | {cpur} | {s['errors']} |")
    if found:
        open(os.path.join(out, "results-https.md"), "w").write("\n".join(lines) + "\n")
        print("\n".join(lines))


def h2_report():
    """results-h2.md: fleetgate against nginx under h2load, HTTP/2 over TLS and h2c (prior knowledge).

    Paired rounds as in https_report; h2.txt rows are "name streams rps p99 cpu errors load1".
    """
    path = os.path.join(work, "h2.txt")
    if not os.path.exists(path):
        return
    h2 = [l.split() for l in open(path) if l.strip()]
    cases = [("HTTP/2 over TLS", "h2"), ("h2c (prior knowledge)", "h2c")]
    lines = ["# HTTP/2 benchmark", "",
             "fleetgate (GOMAXPROCS=1) and nginx (1 worker), each pinned to core 0, h2load and the nginx backend on "
             "core 1; h2load 16 connections × 10 concurrent streams (unless H2_CONNS/H2_STREAMS said otherwise), "
             "`:authority: host0.example.com`. TLS 1.3, TLS_AES_128_GCM_SHA256, one ECDSA P-256 certificate for both, "
             "ALPN h2. nginx `listen … ssl http2` / `listen … http2` (1.22: no `http2 on`), its HTTP/2 defaults stated: "
             "128 streams, 16 KiB frames, 64 KiB initial window, 8 KiB chunks. Upstream plain HTTP/1.1 keepalive, "
             f"2-byte body. Load (1 min) at the start of each measurement in the last column; at the end: `{load}`.", "",
             "| case | proxy | rps, median | rps min–max | × nginx per round: median (min–max) | p99 ms | CPU µs/req "
             "| CPU × nginx per round: median (min–max) | errors | load 1 min, min–max |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    found = False
    for label, suffix in cases:
        fg = [r for r in h2 if r[0] == "fleetgate-" + suffix]
        ng = [r for r in h2 if r[0] == "nginx-" + suffix]
        if not fg or not ng:
            continue
        found = True
        per = sorted(float(a[2]) / max(float(b[2]), 1) for a, b in zip(fg, ng))
        cpu = sorted(float(a[4]) / max(float(b[4]), 0.1) for a, b in zip(fg, ng))
        for name, rs, mine in (("fleetgate", fg, True), ("nginx", ng, False)):
            s = summary(rs)
            loads = [float(r[6]) for r in rs]
            paired = f"{statistics.median(per):.2f} ({per[0]:.2f}–{per[-1]:.2f})" if mine else "–"
            cpur = f"{statistics.median(cpu):.2f} ({cpu[0]:.2f}–{cpu[-1]:.2f})" if mine else "–"
            lines.append(f"| {label} | {name} | {s['rps']:.0f} | {s['min']:.0f}–{s['max']:.0f} | {paired} | "
                         f"{s['p99']:.2f} | {s['cpu']:.1f} | {cpur} | {s['errors']} | {min(loads):.1f}–{max(loads):.1f} |")
    if found:
        open(os.path.join(out, "results-h2.md"), "w").write("\n".join(lines) + "\n")
        print("\n".join(lines))


https_report()
h2_report()
order = [p for p in ("fleetgate", "nginx", "haproxy", "caddy") if any(r[0] == p for r in rows)]
if "nginx" not in order:
    sys.exit(0)  # the plain-HTTP cases did not run (CASES)
side = {p: summary([r for r in rows if r[0] == p]) for p in order}
fixed_med = {p: {"p99_ms": statistics.median(f["p99_ms"] for f in fs), "rate": fs[0]["rate"],
                 "errors": sum(f["errors"] for f in fs), "n": len(fs),
                 "p99s": sorted(f["p99_ms"] for f in fs)} for p, fs in fixed.items()}
nginx = side["nginx"]
rounds = max(s["n"] for s in side.values())
lines = ["# Dataplane benchmark", "",
         "Each proxy pinned to one core (GOMAXPROCS=1 for Go), wrk and the nginx backend on the other; "
         "upstream keepalive on, logs off, 2-byte body. The machine is shared and its load drifts (at the end: `"
         + load + f"`), so every figure is the median of {rounds} rounds, each round starting every proxy afresh "
         "and taking them in a rotated order; CPU time per request is the steadier comparison.", "",
         "| proxy | max rps (wrk), median | rps min–max | × nginx | wrk p99 ms | CPU µs/req | nginx CPU ÷ this | errors | p99 ms at fixed rate (rounds) | fixed-rate errors |",
         "|---|---|---|---|---|---|---|---|---|---|"]
for p, s in side.items():
    f = fixed_med.get(p, {})
    each = ", ".join(f"{v:.2f}" for v in f.get("p99s", []))
    lines.append(f"| {p} | {s['rps']:.0f} | {s['min']:.0f}–{s['max']:.0f} | {s['rps'] / nginx['rps']:.2f} | {s['p99']:.2f} | "
                 f"{s['cpu']:.1f} | {nginx['cpu'] / max(s['cpu'], 0.1):.2f} | {s['errors']} | "
                 f"{f.get('p99_ms', float('nan')):.2f} @ {f.get('rate', '-')} rps ({each}) | {f.get('errors', '-')} |")
by_hosts = group("fleetgate-hosts", key=lambda r: int(r[1]))
lines += ["", "## fleetgate by route table size", "",
          "Table sizes taken in rotated order in each round, each from a fresh process; medians of the rounds.", "",
          "| hostnames | rps | rps min–max | rps × 1 hostname | CPU µs/req | CPU × 1 hostname | p99 ms | errors |",
          "|---|---|---|---|---|---|---|---|"]
base = by_hosts.get(1)
for n in sorted(by_hosts):
    s = by_hosts[n]
    rr = s["rps"] / base["rps"] if base else float("nan")
    cr = s["cpu"] / base["cpu"] if base else float("nan")
    lines.append(f"| {n} | {s['rps']:.0f} | {s['min']:.0f}–{s['max']:.0f} | {rr:.2f} | {s['cpu']:.1f} | {cr:.2f} | {s['p99']:.2f} | {s['errors']} |")
swap_rows = [r for r in rows if r[0] == "fleetgate-swap"]
# The same process's rate just before its swaps, as long (run.sh), by table size.
steady_rows = {r[1]: float(r[2]) for r in rows if r[0] == "fleetgate-steady"}


def swap_ratio(r):
    steady = steady_rows.get(r[1])
    return float(r[2]) / steady if steady else None


for r in swap_rows:
    lines += ["", f"## Table swaps under load ({r[1]} hostnames)", "",
              f"{swaps}; {float(r[2]):.0f} rps during the swaps; errors: **{r[5]}**"]
    if swap_ratio(r) is not None:
        lines.append(f"The same process just before, as long, without swaps: {steady_rows[r[1]]:.0f} rps; "
                     f"during ÷ steady = **{swap_ratio(r):.1%}**")

# The targets, in one place.
targets = ["", "## Targets", "", "| target | result | met |", "|---|---|---|"]
if "fleetgate" in side:
    fg = side["fleetgate"]
    ratio = fg["rps"] / nginx["rps"]
    targets.append(f"| rps ≥ 0.8× nginx | {ratio:.2f}× ({fg['rps']:.0f} vs {nginx['rps']:.0f}); CPU per request "
                   f"{fg['cpu']:.1f} vs {nginx['cpu']:.1f} µs | {'yes' if ratio >= 0.8 else 'no'} |")
fp, npq = fixed_med.get("fleetgate", {}).get("p99_ms"), fixed_med.get("nginx", {}).get("p99_ms")
if fp is not None and npq is not None:
    targets.append(f"| p99 at a fixed rate ≤ nginx | {fp:.2f} ms vs {npq:.2f} ms ({fp / npq:.2f}×) | {'yes' if fp <= npq else 'no'} |")
if base and len(by_hosts) > 1:
    n = max(by_hosts)
    rr, cr = by_hosts[n]["rps"] / base["rps"], by_hosts[n]["cpu"] / base["cpu"]
    targets.append(f"| rps at {n} hostnames within 10% of 1 | {rr:.2f}× rps, {cr:.2f}× CPU per request | "
                   f"{'yes' if rr >= 0.9 else 'no'} (rps), {'yes' if cr <= 1.1 else 'no'} (CPU) |")
for r in swap_rows:
    targets.append(f"| 0 errors during swaps | {r[5]} errors, {float(r[2]):.0f} rps meanwhile | {'yes' if r[5] == '0' else 'no'} |")
    if (ratio := swap_ratio(r)) is not None:
        targets.append(f"| rps during swaps ≥ 80% of steady | {ratio:.1%} ({float(r[2]):.0f} ÷ {steady_rows[r[1]]:.0f}, "
                       f"the same process just before) | {'yes' if ratio >= 0.8 else 'no'} |")
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
names = list(side)
med = [side[p]["rps"] for p in names]
err = [[side[p]["rps"] - side[p]["min"] for p in names], [side[p]["max"] - side[p]["rps"] for p in names]]
a.bar(names, med, yerr=err, capsize=4, color="steelblue")
a.set_title(f"max requests/s, one core (median of {rounds}, min–max)")
a.set_ylabel("rps")
a.bar_label(a.containers[-1], fmt="%.0f")
# CPU per request rather than rps: on a shared machine rps follows the neighbours' load.
hs = sorted(by_hosts)
b.plot(hs, [by_hosts[n]["cpu"] for n in hs], marker="o")
for r in rows:
    if r[0] == "fleetgate-hosts":
        b.plot([int(r[1])], [float(r[4])], marker=".", color="gray", linestyle="none")
b.set_xscale("log")
b.set_ylim(bottom=0)
b.set_ylabel("proxy CPU µs per request")
b.set_title("fleetgate cost by hostnames in the table (median, rounds in gray)")
b.set_xlabel("hostnames")
fig.tight_layout()
fig.savefig(os.path.join(out, "results.png"), dpi=100)
