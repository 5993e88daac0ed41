"""Turns the BENCH_RESULT lines collected by run.sh into the results table
(markdown). Per run: the slowest rank's steps/s and every rank's peak RSS (the
largest is shown); per contestant: the median over repeats. Standard library only."""
import json
import statistics
import sys
from collections import defaultdict

BATCH = {"tiny": 32, "mlp": 64, "cnn": 32, "sync": 8}
ORDER = ["accel_cpp", "accel_c", "torch_cpp", "torch_py", "torch_py_ddp", "accelerate_py", "accel_cpp_nosync"]
# (e) the bindings, when run.sh found them.
BINDINGS = ["accel_py", "accel_java", "accel_go"]
LABEL = {
    "accel_cpp": "(a) libaccel C++", "accel_c": "(b) libaccel C ABI", "torch_cpp": "(c) plain LibTorch C++",
    "accel_py": "(e) libaccel Python", "accel_java": "(e) libaccel Java", "accel_go": "(e) libaccel Go",
    "torch_py": "(d) PyTorch plain", "torch_py_ddp": "(d) PyTorch DDP", "accel_cpp_nosync": "no-comm bound (a, unsynced)",
    "accelerate_py": "(f) Python Accelerate",
}


def main(path):
    runs = defaultdict(list)  # (workload, nproc, contestant, repeat-key) -> rank records
    counter = defaultdict(int)
    pending = defaultdict(list)
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            r = json.loads(line)
            key = (r["workload"], r["nproc"], r["contestant"])
            pending[key].append(r)
            if len(pending[key]) == r["nproc"]:
                runs[key + (counter[key],)] = pending.pop(key)
                counter[key] += 1
    per = defaultdict(lambda: {"sps": [], "rss": [], "threads": 0})
    for (w, n, c, _), ranks in runs.items():
        e = per[(w, n, c)]
        e["sps"].append(min(x["steps_per_s"] for x in ranks))
        e["rss"].append(max(x["peak_rss_mb"] for x in ranks))
        e["threads"] = ranks[0]["threads"]
    med = {k: statistics.median(v["sps"]) for k, v in per.items()}

    print("| workload | procs x threads | contestant | steps/s (median, min-max) | samples/s | peak RSS/proc MB "
          "| vs (c) | vs (d) | vs (f) | % of no-comm bound | runs |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for w in BATCH:
        for n in (1, 2):
            names = [c for c in ORDER + BINDINGS if (w, n, c) in per]
            for c in names:
                e, s = per[(w, n, c)], med[(w, n, c)]
                vs_c = med.get((w, 1, "torch_cpp")) if n == 1 else None
                vs_d = med.get((w, n, "torch_py" if n == 1 else "torch_py_ddp"))
                vs_f = med.get((w, n, "accelerate_py"))
                bound = med.get((w, n, "accel_cpp_nosync")) if n > 1 else None
                fmt = lambda ref: f"{s / ref:.2f}x" if ref else "–"
                share = f"{100 * s / bound:.0f}%" if bound else "–"
                spread = f"{min(e['sps']):.2f}-{max(e['sps']):.2f}"
                print(f"| {w} | {n} x {e['threads']} | {LABEL.get(c, c)} | {s:.2f} ({spread}) | {s * BATCH[w] * n:.0f} | "
                      f"{statistics.median(e['rss']):.0f} | {fmt(vs_c)} | {fmt(vs_d)} | {fmt(vs_f)} | {share} | "
                      f"{len(e['sps'])} |")


if __name__ == "__main__":
    main(sys.argv[1])
