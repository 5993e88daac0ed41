"""The LM bench's table from lm_bench.sh's BENCH_RESULT lines: per contestant
and process count, the median tokens/s (min-max over rounds), the median peak
RSS per process, and both as ratios to Python Accelerate's."""
import collections
import json
import statistics
import sys


def main():
    runs = collections.defaultdict(lambda: collections.defaultdict(list))  # (nproc, name) -> round -> lines
    loads = []
    for line in open(sys.argv[1]):
        r = json.loads(line)
        runs[(r["nproc"], r["contestant"])][r["round"]].append(r)
        loads.append(r["load"])
    table = {}
    for key, rounds in runs.items():
        tps = [min(x["tokens_per_s"] for x in lines) for lines in rounds.values()]  # the slowest rank
        rss = [max(x["peak_rss_mb"] for x in lines) for lines in rounds.values()]
        table[key] = (statistics.median(tps), min(tps), max(tps), statistics.median(rss), len(tps))
    print(f"1-minute load average during the runs: median {statistics.median(loads):.1f}, max {max(loads):.1f}")
    print("| processes x threads | contestant | tokens/s (median, min-max) | vs Accelerate | peak RSS MB/process | vs Accelerate | rounds |")
    print("|---|---|---|---|---|---|---|")
    for (nproc, name), (tps, lo, hi, rss, n) in sorted(table.items()):
        peer = table.get((nproc, "accelerate"))
        ratio = f"{tps / peer[0]:.2f}x" if peer else "-"
        rss_ratio = f"{rss / peer[3]:.2f}x" if peer else "-"
        threads = 2 if nproc == 1 else 1
        print(f"| {nproc} x {threads} | {name} | {tps:.0f} ({lo:.0f}-{hi:.0f}) | {ratio} | {rss:.0f} | {rss_ratio} | {n} |")


if __name__ == "__main__":
    main()
