#!/usr/bin/env python3
"""tests/bench/summarize.py RESULTS_DIR: Markdown tables from run.sh's runs.csv and rss.csv.

Every figure is a median over the rounds; ratios are medians of per-round ratios (the two
targets of a ratio ran back to back in the same round, so drift of the machine cancels)."""
import csv
import os
import sys
from collections import defaultdict
from statistics import median

out = sys.argv[1]
runs = list(csv.DictReader(open(os.path.join(out, "runs.csv"))))
NAMES = {"direct": "direct (1 upstream)", "nginx": "nginx", "nginxlog": "nginx + access log", "sluice": "sluice",
         "sluicelog": "sluice + access log", "sluicelognc": "sluice, every request upstream (coalescing off; access log, probes, credits, a scoped key and its tier)", "refused": "sluice [dead, up1]",
         "healthy": "sluice [up1]", "one429": "sluice [429, ok1, ok2]", "no429": "sluice [ok1, ok2]",
         "shung": "sluice [hung, ok1, ok2]", "shungnc": "sluice [hung, ok1, ok2], no coalescing", "nhung": "nginx [hung, ok1, ok2]", "shealthy": "sluice [ok1, ok2]",
         "cachesl": "sluice, answers from its response cache"}
CACHE_LABEL = "cache hit (eth_chainId)"


def f(r, k):
    v = r.get(k, "")
    return float(v) if v not in ("", None) else None


def med(rows, k):
    vals = [f(r, k) for r in rows if f(r, k) is not None]
    return median(vals) if vals else None


def spread(rows, k):
    vals = [f(r, k) for r in rows]
    m = median(vals)
    return (max(vals) - min(vals)) / m * 100 if m else 0


def fmt(v, d=1):
    return "—" if v is None else f"{v:,.{d}f}"


def up_per_req(rows):
    """Median of the upstreams' requests per answered request (None when not counted)."""
    v = [float(r["up_requests"]) / float(r["requests"]) for r in rows if r["up_requests"] and float(r["requests"])]
    return median(v) if v else None


def errs(rows):
    status = sum(int(r["status_err"]) for r in rows)
    other = sum(int(r[k]) for r in rows for k in ("connect_err", "read_err", "write_err", "timeout_err"))
    return status, other


def by(rows, *keys):
    g = defaultdict(list)
    for r in rows:
        g[tuple(r[k] for k in keys)].append(r)
    return g


def paired_ratio(a_rows, b_rows, k, diff=False):
    """median over rounds of a/b (or a-b) for the runs of the same round"""
    b = {r["round"]: f(r, k) for r in b_rows}
    vals = []
    for r in a_rows:
        if r["round"] in b and b[r["round"]]:
            vals.append(f(r, k) - b[r["round"]] if diff else f(r, k) / b[r["round"]])
    return median(vals) if vals else None


def ratio_range(a_rows, b_rows, k):
    """"min–max" of the per-round ratios a/b: how far one round's ratio can stray"""
    b = {r["round"]: f(r, k) for r in b_rows}
    vals = [f(r, k) / b[r["round"]] for r in a_rows if r["round"] in b and b[r["round"]]]
    return f"{min(vals):.2f}–{max(vals):.2f}" if vals else "—"


def pair_table(title, intro, groups):
    """Side by side: target a against target b per workload and concurrency, paired per round.
    groups: (g, combos, a, b, direct, label) each; label, if any, names the group's rows'
    workload (the cache phase's rows in the headline)."""
    print(title + "\n")
    print(intro + "\n")
    print("| workload | c | req/s sluice | req/s nginx | req/s ratio (rounds) | CPU µs/req sluice | CPU µs/req nginx | "
          "CPU/req ratio (rounds) | p99 ms sluice | p99 ms nginx | p99 added over direct ms, sluice | upstream req/req sluice |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for g, combos, a, b, direct, label in groups:
        pair_rows(g, combos, a, b, direct, label)
    print()


def pair_rows(g, combos, a, b, direct, label):
    for wl, c in combos:
        sa, nb, d = g.get((wl, c, a)), g.get((wl, c, b)), g.get((wl, c, direct)) if direct else None
        if not (sa and nb):
            continue
        added = (med(sa, 'p99_us') - med(d, 'p99_us')) / 1000 if d else None
        print(f"| {label or wl} | {c} | {fmt(med(sa, 'rps'), 0)} | {fmt(med(nb, 'rps'), 0)} | "
              f"**{fmt(paired_ratio(sa, nb, 'rps'), 2)}** ({ratio_range(sa, nb, 'rps')}) | "
              f"{fmt(med(sa, 'proxy_us_per_req'), 1)} | {fmt(med(nb, 'proxy_us_per_req'), 1)} | "
              f"**{fmt(paired_ratio(sa, nb, 'proxy_us_per_req'), 2)}** ({ratio_range(sa, nb, 'proxy_us_per_req')}) | "
              f"{fmt(med(sa, 'p99_us') / 1000, 2)} | {fmt(med(nb, 'p99_us') / 1000, 2)} | {fmt(added, 2)} | "
              f"{fmt(up_per_req(sa), 3)} |")


def env_lines():
    p = os.path.join(out, "env.txt")
    return open(p).read().strip().splitlines() if os.path.exists(p) else []


print("## sluice benchmark\n")
for line in env_lines():
    print(f"- {line}")
others = [f(r, "other_cpu_pct") for r in runs]
steal = [f(r, "steal_pct") for r in runs]
if others:
    print(f"- CPU used by other processes during the runs (% of one CPU): median {median(others):.0f}, "
          f"max {max(others):.0f}; steal median {median(steal):.1f}%")
print()


def workload_combos(rows):
    combos = []
    for r in rows:
        if (r["workload"], r["conc"]) not in combos:
            combos.append((r["workload"], r["conc"]))
    return combos


main = [r for r in runs if r["phase"] == "main"]
cache = [r for r in runs if r["phase"] == "cache"]
headline = []
if any(r["target"] == "sluicelognc" for r in main):
    headline.append((by(main, "workload", "conc", "target"), workload_combos(main), "sluicelognc", "nginxlog", "direct", None))
if cache:
    headline.append((by(cache, "workload", "conc", "target"), workload_combos(cache), "cachesl", "nginxlog", None, CACHE_LABEL))
if headline:
    rounds = "/".join(sorted({str(len({r["round"] for r in p})) for p in (main, cache) if p}))
    pair_table(f"### Headline: sluice with coalescing off, the wave's features and a scoped key / nginx + access log "
               f"({rounds} interleaved rounds, medians of per-round ratios)",
               "sluice with `coalesce: { max_waiters: 0 }` and the features a deployment runs: access log, health "
               "probes, a credit budget on each endpoint, `access: { anonymous: deny }` with wrk presenting a "
               "scoped key (`networks`, `methods` allow and deny globs, `contracts`) on every request, and the "
               "key's tier checked on every call. On `eth_blockNumber` (43 B) and `eth_getLogs` (20 KB) every "
               "request goes upstream, as through nginx (*upstream req/req* 1.000). The *" + CACHE_LABEL + "* rows "
               "are the cache phase's: the same sluice with its response cache answers `eth_chainId` after the "
               "first call (*upstream req/req* ≈ 0), nginx proxies every one upstream. In brackets: the lowest and "
               "highest per-round ratio.", headline)

if main or cache:
    rounds = "/".join(sorted({str(len({r["round"] for r in p})) for p in (main, cache) if p}))
    print(f"### All targets: throughput, latency and CPU ({rounds} interleaved rounds, medians)\n")
    print("CPU µs/req is the proxy's own CPU (master + workers) per completed request; for *direct* it is "
          "the fake upstream's. *upstream µs/req* is the two fake upstreams' CPU behind the proxy.\n")
    print("*upstream req/req*: requests the upstreams got per answered request (below 1: coalesced or "
          "answered from the cache).\n")
    print("| workload | c | target | req/s | spread | p50 ms | p99 ms | CPU µs/req | upstream µs/req | upstream req/req | resp B | non-2xx | errors |")
    print("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for phase, label in ((main, None), (cache, "eth_chainId (cache phase)")):
        g = by(phase, "workload", "conc", "target")
        for wl, c in workload_combos(phase):
            for t in ["direct", "nginx", "nginxlog", "sluice", "sluicelog", "sluicelognc", "cachesl"]:
                rows = g.get((wl, c, t))
                if not rows:
                    continue
                st, other = errs(rows)
                print(f"| {label or wl} | {c} | {NAMES[t]} | {fmt(med(rows, 'rps'), 0)} | {spread(rows, 'rps'):.0f}% | "
                      f"{fmt(med(rows, 'p50_us') / 1000, 2)} | {fmt(med(rows, 'p99_us') / 1000, 2)} | "
                      f"{fmt(med(rows, 'proxy_us_per_req'), 1)} | {fmt(med(rows, 'upstream_us_per_req'), 1)} | "
                      f"{fmt(up_per_req(rows), 3)} | {fmt(med(rows, 'bytes_per_resp'), 0)} | {st} | {other} |")
    print()

if main:
    g = by(main, "workload", "conc", "target")
    combos = workload_combos(main)
    print("### sluice with its defaults (coalescing on) / nginx (median of per-round ratios)\n")
    print("Not like for like: wrk repeats one call, so with coalescing on most of sluice's answers are "
          "another client's upstream answer (*upstream req/req* above), which nginx never does. The headline "
          "is the first table.\n")
    print("| workload | c | req/s sluice/nginx | CPU/req sluice/nginx | req/s sluice+log/nginx | "
          "CPU/req sluice+log/nginx | access log cost µs/req | log bytes/req |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for wl, c in combos:
        n, s, sl = g.get((wl, c, "nginx")), g.get((wl, c, "sluice")), g.get((wl, c, "sluicelog"))
        if not (n and s):
            continue
        cells = [fmt(paired_ratio(s, n, "rps"), 2), fmt(paired_ratio(s, n, "proxy_us_per_req"), 2)]
        if sl:
            lb = [float(r["log_bytes"]) / float(r["requests"]) for r in sl if r["log_bytes"] and float(r["requests"])]
            cells += [fmt(paired_ratio(sl, n, "rps"), 2), fmt(paired_ratio(sl, n, "proxy_us_per_req"), 2),
                      fmt(paired_ratio(sl, s, "proxy_us_per_req", diff=True), 1), fmt(median(lb) if lb else None, 0)]
        else:
            cells += ["—"] * 4
        print(f"| {wl} | {c} | " + " | ".join(cells) + " |")
    print()
    if any(t == "nginxlog" for (_, _, t) in g):
        print("### both with their access log on: sluice + log / nginx + log (median of per-round ratios)\n")
        print("| workload | c | req/s | CPU/req | nginx access log cost µs/req | sluice access log cost µs/req |")
        print("|---|---:|---:|---:|---:|---:|")
        for wl, c in combos:
            n, nl, s, sl = (g.get((wl, c, t)) for t in ("nginx", "nginxlog", "sluice", "sluicelog"))
            if not (nl and sl):
                continue
            print(f"| {wl} | {c} | {fmt(paired_ratio(sl, nl, 'rps'), 2)} | {fmt(paired_ratio(sl, nl, 'proxy_us_per_req'), 2)} | "
                  f"{fmt(paired_ratio(nl, n, 'proxy_us_per_req', diff=True), 1) if n else '—'} | "
                  f"{fmt(paired_ratio(sl, s, 'proxy_us_per_req', diff=True), 1) if s else '—'} |")
        print()

feat = [r for r in runs if r["phase"] == "features"]
if feat:
    rounds = len({r["round"] for r in feat})
    print(f"### What each layer costs (eth_blockNumber, c=64, {rounds} interleaved rounds)\n")
    print("Each row is sluice with one thing changed from its defaults; the difference is the median of "
          "per-round differences against *default* (run in the same round).\n")
    print("| variant | req/s | CPU µs/req | CPU µs/req vs default | non-2xx | errors |")
    print("|---|---:|---:|---:|---:|---:|")
    g = by(feat, "target")
    base = g.get(("fbase",))
    labels = {"fbase": "default", "fnoflush": "state flush off (flush_ms: 0)",
              "fnoprobe": "health probes off (probe_interval_ms: 0)",
              "fcredits": "credit budget on every endpoint", "flimits": "client tier checked on every call"}
    for t, label in labels.items():
        rows = g.get((t,))
        if not rows:
            continue
        st, other = errs(rows)
        d = "—" if t == "fbase" or not base else f"{paired_ratio(rows, base, 'proxy_us_per_req', diff=True):+.2f}"
        print(f"| {label} | {fmt(med(rows, 'rps'), 0)} | {fmt(med(rows, 'proxy_us_per_req'), 2)} | {d} | {st} | {other} |")
    print()

pr = [r for r in runs if r["phase"] == "pressure"]
if pr:
    rounds = len({r["round"] for r in pr})
    print(f"### Pressure layer and merged polls (c=64, {rounds} interleaved rounds, indicative)\n")
    print("CPU µs/req on a shared machine: differences are medians of per-round differences. The stable "
          "figures are the instruction counts below (callgrind).\n")
    print("| workload | variant | req/s | CPU µs/req | vs its pair | upstream req per request | non-2xx | errors |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    g = by(pr, "workload", "target")
    for wl, a, b, la, lb in (("eth_blockNumber", "ppress", "pnopress", "pressure on (default)", "pressure.enabled: false"),
                             ("eth_getTransactionReceipt", "ppress", "pnomerge", "merge_window_ms: 2 (default)",
                              "merge_window_ms: 0")):
        ra, rb = g.get((wl, a)), g.get((wl, b))
        for t, label, rows in ((a, la, ra), (b, lb, rb)):
            if not rows:
                continue
            st, other = errs(rows)
            d = f"{paired_ratio(ra, rb, 'proxy_us_per_req', diff=True):+.2f}" if t == a and ra and rb else "—"
            upr = median(float(r["up_requests"]) / float(r["requests"]) for r in rows if float(r["requests"]))
            print(f"| {wl} | {label} | {fmt(med(rows, 'rps'), 0)} | {fmt(med(rows, 'proxy_us_per_req'), 2)} | {d} | "
                  f"{upr:.3f} | {st} | {other} |")
    print()
    cg = os.path.join(out, "callgrind.md")
    if os.path.exists(cg):
        print(open(cg).read())

ref = [r for r in runs if r["phase"] == "refused"]
if ref:
    print("### Failure: refused first endpoint (eth_blockNumber, c=8, medians)\n")
    print("| target | req/s | p50 ms | p90 ms | p99 ms | max ms | CPU µs/req | non-2xx | errors |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    g = by(ref, "target")
    for t in ("refused", "healthy"):
        rows = g.get((t,))
        if rows:
            st, other = errs(rows)
            print(f"| {NAMES[t]} | {fmt(med(rows, 'rps'), 0)} | {fmt(med(rows, 'p50_us') / 1000, 3)} | "
                  f"{fmt(med(rows, 'p90_us') / 1000, 3)} | {fmt(med(rows, 'p99_us') / 1000, 3)} | "
                  f"{fmt(med(rows, 'max_us') / 1000, 2)} | {fmt(med(rows, 'proxy_us_per_req'), 1)} | {st} | {other} |")
    a, b = g.get(("refused",)), g.get(("healthy",))
    if a and b:
        d = paired_ratio(a, b, "p99_us", diff=True) / 1000
        verdict = "within" if d <= 1.0 else "ABOVE"
        print(f"\np99 added by the dead first endpoint: **{d:+.3f} ms** (median of per-round differences; "
              f"target ≤ 1 ms: {verdict}); req/s ratio {paired_ratio(a, b, 'rps'):.2f}.")
    print()

rl = [r for r in runs if r["phase"] == "one429"]
if rl:
    print("### Failure: first endpoint answers 429 + Retry-After: 2 (eth_blockNumber, c=64, medians)\n")
    print("| target | req/s | p50 ms | p99 ms | client req/round | upstream req/round | upstream/client | "
          "to first endpoint/round | non-2xx | errors |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    g = by(rl, "target")
    for t in ("one429", "no429"):
        rows = g.get((t,))
        if not rows:
            continue
        st, other = errs(rows)
        ratio = median(float(r["up_requests"]) / float(r["requests"]) for r in rows)
        tot = sum(float(r["up_requests"]) for r in rows) / sum(float(r["requests"]) for r in rows)
        print(f"| {NAMES[t]} | {fmt(med(rows, 'rps'), 0)} | {fmt(med(rows, 'p50_us') / 1000, 2)} | "
              f"{fmt(med(rows, 'p99_us') / 1000, 2)} | {fmt(med(rows, 'requests'), 0)} | "
              f"{fmt(med(rows, 'up_requests'), 0)} | {ratio:.4f} (all rounds: {tot:.4f}) | "
              f"{fmt(med(rows, 'first_ep_requests'), 0)} | {st} | {other} |")
    print("\n*to first endpoint* is the 429 provider for the first row and ok1 for the second.")
    print()

rss_path = os.path.join(out, "rss.csv")
if os.path.exists(rss_path):
    rss = list(csv.DictReader(open(rss_path)))
    if rss:
        conns = rss[0]["conns"]
        print(f"### RSS per worker with {conns} keep-alive clients (1 request/s each)\n")
        print("| proxy | workload | established (max seen) | worker RSS before MB | worker RSS peak MB (each) | "
              "max per worker MB | master MB | requests | errors |")
        print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
        for (p, wl), rows in by(rss, "proxy", "workload").items():
            idle = max(int(r["rss_idle_kb"]) for r in rows) / 1024
            peaks = [int(r["rss_max_kb"]) / 1024 for r in rows]
            print(f"| {p} | {wl} | {rows[0]['established']} | {idle:.1f} | "
                  f"{', '.join(f'{x:.1f}' for x in peaks)} | **{max(peaks):.1f}** | "
                  f"{int(rows[0]['master_rss_kb']) / 1024:.1f} | {rows[0]['requests']} | {rows[0]['errors']} |")
        print()

hung = [r for r in runs if r["phase"] == "hung"]
if hung:
    print("### Failure: first of three upstreams hangs (eth_blockNumber, c=8, attempt 2 s, medians)\n")
    print("Added latency is against sluice [ok1, ok2] in the same round (median of per-round differences); "
          "upstream requests per client request include the hung upstream's.\n")
    print("| target | req/s | p50 ms | p99 ms | max ms | added p50 ms | added p99 ms | upstream req / request | "
          "requests to the hung one (per run) | non-2xx | errors |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    g = by(hung, "target")
    base = g.get(("shealthy",), [])
    for t in ("shung", "shungnc", "nhung", "shealthy"):
        rows = g.get((t,))
        if not rows:
            continue
        st, other = errs(rows)
        upr = [f(r, "up_requests") / f(r, "requests") for r in rows if f(r, "requests")]
        hung_share = [f(r, "first_ep_requests") for r in rows if f(r, "first_ep_requests") is not None]
        a50 = paired_ratio(rows, base, "p50_us", diff=True) if t != "shealthy" else None
        a99 = paired_ratio(rows, base, "p99_us", diff=True) if t != "shealthy" else None
        print(f"| {NAMES[t]} | {fmt(med(rows, 'rps'), 0)} | {fmt(med(rows, 'p50_us') / 1000, 3)} | "
              f"{fmt(med(rows, 'p99_us') / 1000, 3)} | {fmt(med(rows, 'max_us') / 1000, 1)} | "
              f"{fmt(None if a50 is None else a50 / 1000, 3)} | {fmt(None if a99 is None else a99 / 1000, 3)} | "
              f"{fmt(median(upr) if upr else None, 4)} | "
              f"{'/'.join(str(int(x)) for x in hung_share) if hung_share else '—'} | "
              f"{st} | {other} |")
    print()
