#!/usr/bin/env python3
"""Prints the table of a benchmark run from its JSON lines (bench/run.sh writes them).

One row per figure: vshmem's value, its fraction of the ceiling measured in the same run (for
bandwidths), and where NVSHMEM ran the same workload, the ratio of the two. Repeated records of
one figure (shmem_init is run several times) are reduced to their median. The targets of issue #6
are checked at the end wherever the run holds the figures they need.
"""
import argparse
import json
import statistics
import sys
from collections import defaultdict

# Units where a larger value is better; for the others (times) smaller is better.
HIGHER_IS_BETTER = {"GB/s", "Mops/s"}


def size_str(b):
    if b == 0:
        return "-"
    for shift, unit in ((30, "GiB"), (20, "MiB"), (10, "KiB")):
        if b >= (1 << shift) and b % (1 << shift) == 0:
            return f"{b >> shift} {unit}"
    return f"{b} B"


def load(paths):
    recs = []
    for path in paths:
        with open(path) as f:
            for n, line in enumerate(f, 1):
                line = line.strip()
                if not line.startswith("{"):
                    continue
                try:
                    recs.append(json.loads(line))
                except json.JSONDecodeError as e:
                    print(f"report: {path}:{n}: skipped a malformed line ({e})", file=sys.stderr)
    return recs


def key(r, impl=None):
    return (r["suite"], r.get("backend", ""), r["bench"], r["variant"], r["bytes"], r["npes"],
            impl if impl is not None else r["impl"])


def reduce(recs):
    """(suite, backend, bench, variant, bytes, npes, impl) -> (value, unit, ceiling ratio)."""
    groups = defaultdict(list)
    for r in recs:
        if r.get("value") is None:
            continue
        groups[key(r)].append(r)
    out = {}
    for k, rs in groups.items():
        value = statistics.median(r["value"] for r in rs)
        ratios = [r["ratio"] for r in rs if r.get("ratio") is not None]
        ceiling = rs[0].get("ceiling", "")
        out[k] = (value, rs[0]["unit"], statistics.median(ratios) if ratios else None, ceiling)
    return out


def fmt_value(v, unit):
    if unit == "GB/s":
        return f"{v:9.2f} {unit}"
    if v >= 100:
        return f"{v:9.1f} {unit}"
    return f"{v:9.3f} {unit}"


def print_table(figs, out):
    rows = sorted(k for k in figs if k[6] == "vshmem")
    header = (f"{'suite':5} {'backend':7} {'benchmark':18} {'variant':16} {'size':>8} {'PEs':>3}"
              f" {'vshmem':>16} {'of ceiling':>18} {'NVSHMEM':>16} {'vs NVSHMEM':>10}")
    print(header, file=out)
    print("-" * len(header), file=out)
    last = None
    for k in rows:
        suite, backend, bench, variant, nbytes, npes, _ = k
        value, unit, ratio, ceiling = figs[k]
        group = (suite, backend, bench)
        if last is not None and group != last:
            print("", file=out)
        last = group
        ceil = f"{ratio * 100:5.1f}% {ceiling}" if ratio is not None else ""
        nv = figs.get(k[:6] + ("nvshmem",))
        nv_s, vs = "", ""
        if nv:
            nv_s = fmt_value(nv[0], nv[1])
            if nv[0] > 0 and value > 0:
                # Always "how much better vshmem is": > 1 means vshmem wins.
                better = value / nv[0] if unit in HIGHER_IS_BETTER else nv[0] / value
                vs = f"{better:8.2f}x"
        print(f"{suite:5} {backend:7} {bench:18.18} {variant:16.16} {size_str(nbytes):>8} {npes:3}"
              f" {fmt_value(value, unit):>16} {ceil[:18]:>18} {nv_s:>16} {vs:>10}", file=out)
    # Figures NVSHMEM has and vshmem lacks (a benchmark left out on our side) are listed too, so
    # that nothing measured is hidden.
    missing = sorted(k for k in figs if k[6] == "nvshmem" and k[:6] + ("vshmem",) not in figs)
    if missing:
        print("\nNVSHMEM only (no vshmem figure in this run):", file=out)
        for k in missing:
            value, unit, ratio, ceiling = figs[k]
            ceil = f"  {ratio * 100:5.1f}% of {ceiling}" if ratio is not None else ""
            print(f"  {k[2]} {k[3]} {size_str(k[4])} np={k[5]}: {fmt_value(value, unit)}{ceil}",
                  file=out)
    print("\n'vs NVSHMEM' > 1: vshmem is better (faster or more bandwidth).", file=out)


def check_targets(figs, out):
    """The targets of issues #6 and #18, on the GPU suite."""
    lines = []

    def fig(bench, variant, nbytes, npes, impl="vshmem"):
        return figs.get(("gpu", "cuda", bench, variant, nbytes, npes, impl))

    gpu_npes = sorted({k[5] for k in figs if k[0] == "gpu"})
    for size in (16 << 20, 512 << 20):
        for variant in ("block", "block,interleaved", "block,odd-chunks"):
            for n in gpu_npes:
                f = fig("put_bw", variant, size, n)
                if f and f[2] is not None:
                    ok = f[2] >= 0.90
                    lines.append((ok, f"{variant} put {size_str(size)} np={n}: "
                                      f"{f[2] * 100:.1f}% of {f[3]} (target >= 90%)"))
    for bench, variant, factor in (("p_lat", "thread", 1.0), ("pingpong_lat", "put_signal", 1.0),
                                   ("fetch_add_lat", "thread", 1.0),
                                   ("barrier_all_lat", "block", 0.5)):
        for n in gpu_npes:
            ours, theirs = fig(bench, variant, 8 if bench != "barrier_all_lat" else 0, n), None
            if ours:
                theirs = fig(bench, variant, 8 if bench != "barrier_all_lat" else 0, n, "nvshmem")
            if ours and theirs:
                ok = ours[0] <= factor * theirs[0]
                lines.append((ok, f"{bench} {variant} np={n}: {ours[0]:.3f} vs NVSHMEM "
                                  f"{theirs[0]:.3f} {ours[1]} (target <= {factor:g}x)"))
    for variant in ("last_in_to_last_out", "with_context"):
        for n in gpu_npes:
            ours, theirs = fig("init", variant, 0, n), fig("init", variant, 0, n, "nvshmem")
            if ours and theirs:
                lines.append((ours[0] <= 0.5 * theirs[0],
                              f"shmem_init {variant} np={n}: {ours[0]:.1f} ms vs NVSHMEM "
                              f"{theirs[0]:.1f} ms (target <= 0.5x)"))
    if lines:
        print("\nTargets (issues #6, #18):", file=out)
        for ok, text in lines:
            print(f"  [{'met ' if ok else 'MISS'}] {text}", file=out)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("jsonl", nargs="+", help="JSON-lines files written by the benchmarks")
    args = ap.parse_args()
    recs = load(args.jsonl)
    if not recs:
        print("report: no figures in " + ", ".join(args.jsonl), file=sys.stderr)
        return 1
    figs = reduce(recs)
    print_table(figs, sys.stdout)
    check_targets(figs, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
