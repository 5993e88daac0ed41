"""The LM bench's table from lm_bench.sh's BENCH_RESULT lines and
machine_peak.py's lines: per precision, process count and contestant, the
median tokens/s (min-max over rounds), the ratios to both Accelerates, the
model FLOPs utilisation and the median peak RSS per process.

    lm_report.py RESULTS MACHINE

MFU = tokens/s x lm_shapes.flops_per_token() / the machine's peak for the
run's precision: the fastest square matmul any of the bench's torches ran
(fp32 for "no", bf16 for "bf16"), on the same 2 cores."""
import collections
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lm_shapes import flops_per_token  # noqa: E402

PEERS = ("accelerate_1.15", "accelerate_0.22")


def main():
    runs = collections.defaultdict(lambda: collections.defaultdict(list))  # (precision, nproc, name) -> round -> lines
    loads = []
    for line in open(sys.argv[1]):
        r = json.loads(line)
        runs[(r.get("precision", "no"), r["nproc"], r["contestant"])][r["round"]].append(r)
        loads.append(r["load"])
    machines = [json.loads(line) for line in open(sys.argv[2])]
    peak = {"no": max(m["fp32_gflops"] for m in machines), "bf16": max(m["bf16_gflops"] for m in machines)}
    print(f"CPU: {machines[0]['cpu']} ({machines[0]['isa']}), {machines[0]['threads']} threads")
    for m in machines:
        print(f"  torch {m['torch']}: matmul fp32 {m['fp32_gflops']:.0f} GFLOP/s, bf16 {m['bf16_gflops']:.0f} GFLOP/s")
    flops = flops_per_token()
    print(f"peak: fp32 {peak['no']:.0f}, bf16 {peak['bf16']:.0f} GFLOP/s; {flops / 1e6:.1f} MFLOP per trained token")
    print(f"1-minute load average during the runs: median {statistics.median(loads):.1f}, max {max(loads):.1f}")
    table = {}
    for key, rounds in runs.items():
        tps = [min(x["tokens_per_s"] for x in lines) for lines in rounds.values()]  # the slowest rank
        rss = [max(x["peak_rss_mb"] for x in lines) for lines in rounds.values()]
        table[key] = (statistics.median(tps), min(tps), max(tps), statistics.median(rss), len(tps))
    print("| precision | processes x threads | contestant | tokens/s (median, min-max) | vs Accelerate 1.15 "
          "| vs Accelerate 0.22 | MFU | peak RSS MB/process | vs Accelerate 1.15 | rounds |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for (precision, nproc, name), (tps, lo, hi, rss, n) in sorted(table.items()):
        ratios = []
        for peer in PEERS:
            other = table.get((precision, nproc, peer))
            ratios.append(f"{tps / other[0]:.2f}x" if other else "-")
        modern = table.get((precision, nproc, PEERS[0]))
        rss_ratio = f"{rss / modern[3]:.2f}x" if modern else "-"
        mfu = tps * flops / (peak[precision] * 1e9) if precision in peak else float("nan")
        threads = 2 if nproc == 1 else 1
        label = "fp32" if precision == "no" else precision
        print(f"| {label} | {nproc} x {threads} | {name} | {tps:.0f} ({lo:.0f}-{hi:.0f}) | {ratios[0]} | {ratios[1]} "
              f"| {100 * mfu:.1f}% | {rss:.0f} | {rss_ratio} | {n} |")


if __name__ == "__main__":
    main()
