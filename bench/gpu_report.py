"""The GPU comparison's table from the BENCH_RESULT lines bench/gpu.sh collects:
median steps/s per (workload, precision, contestant) and libaccel's ratio to
each Python peer. Standard library only."""
import json
import statistics
import sys
from collections import defaultdict

BATCH = {"mlp": 64, "cnn": 32}
LABEL = {"accel_cpp": "libaccel C++", "accelerate_py": "Python Accelerate", "torch_py": "PyTorch plain loop"}


def main(path):
    runs = defaultdict(list)
    with open(path) as f:
        for line in f:
            if line.strip():
                r = json.loads(line)
                runs[(r["workload"], r["precision"], r["contestant"])].append(r["steps_per_s"])
    print("| workload | precision | contestant | steps/s | samples/s | libaccel vs this | runs |")
    print("|---|---|---|---:|---:|---:|---:|")
    for w in BATCH:
        for p in ("no", "bf16"):
            ours = runs.get((w, p, "accel_cpp"))
            for c in LABEL:
                sps = runs.get((w, p, c))
                if not sps:
                    continue
                m = statistics.median(sps)
                ratio = f"{statistics.median(ours) / m:.2f}x" if ours and c != "accel_cpp" else "–"
                print(f"| {w} | {'fp32' if p == 'no' else p} | {LABEL[c]} | {m:.1f} | {m * BATCH[w]:.0f} | {ratio} | {len(sps)} |")


if __name__ == "__main__":
    main(sys.argv[1])
