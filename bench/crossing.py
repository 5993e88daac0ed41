#!/usr/bin/env python3
"""Where a binding's step time goes: inside libaccel, or outside it (the host
language's loop and the Python/JNI/cgo crossings), read from the profiler's
timeline (accelerator.profile) of each contestant at 2 processes x 1 thread.

Each contestant (C++, Python, Java, Go; the loop of bench/accel_bench.cpp)
first runs its timed steps unprofiled, for steps/s, then profiles
--trace-steps more steps into a trace. From each rank's trace: the window is
the first event's start to the last event's end; "inside" is the union of the
top-level events (every accel:: span and every LibTorch operator the loop
calls outside one, such as the loss); "outside" is the rest, the time the
rank spent in its own language and in crossing into the library. The C++
contestant's outside time is the floor (its loop and the ABI-free calls);
what a binding adds over it is its crossing cost.

  bench/crossing.py [--build-dir build] [--workloads tiny,mlp] [--rounds 3]
  bench/crossing.py --smoke   a few steps of tiny per contestant; fails if a
                              trace is missing or empty (CTest bench_crossing_smoke)

Needs the bindings the build has (build/python, build/java/accel.jar, a Go
toolchain); contestants that are missing are skipped and named.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
STEPS = {"tiny": 1500, "mlp": 60, "sync": 4}
TRACE_STEPS = {"tiny": 200, "mlp": 20, "sync": 3}


def go_contestant(build):
    """Builds bench/bindings/go into <build>/bin/accel_bench_go, as bench/run.sh does."""
    go = shutil.which("go") or ("/usr/local/go/bin/go" if os.path.exists("/usr/local/go/bin/go") else None)
    if go is None:
        return None
    binary = os.path.join(build, "bin", "accel_bench_go")
    env = dict(os.environ, PKG_CONFIG_PATH=os.path.join(build, "go", "pkgconfig"), GOFLAGS="-mod=mod",
               GOPROXY="off", GOTOOLCHAIN="local", GOCACHE=os.path.join(build, "go", "cache"),
               GOPATH=os.path.join(build, "go", "path"))
    done = subprocess.run([go, "build", "-o", binary, "."], cwd=os.path.join(HERE, "bindings", "go"), env=env)
    return [binary, "--workload-dir", os.path.join(HERE, "workloads")] if done.returncode == 0 else None


def contestants(build, python):
    found = {"C++": ([os.path.join(build, "bin", "accel_bench")], {})}
    if os.path.isdir(os.path.join(build, "python", "accel")):
        found["Python"] = ([python, os.path.join(HERE, "bindings", "accel_bench.py")],
                           {"PYTHONPATH": os.path.join(build, "python")})
    jar = os.path.join(build, "java", "accel.jar")
    if os.path.exists(jar) and shutil.which("java"):
        found["Java"] = (["java", "-Djava.library.path=" + os.path.join(build, "java"), "-cp", jar,
                          os.path.join(HERE, "bindings", "AccelBench.java"), "--workload-dir",
                          os.path.join(HERE, "workloads")], {})
    go = go_contestant(build)
    if go:
        found["Go"] = (go, {})
    return found


def outside_share(trace_path, steps):
    """(window, inside, outside) in ms per step from one rank's trace: the operators' spans (not
    the ProfilerStep#N ranges, "user_annotation", which cover whole steps)."""
    with open(trace_path) as f:
        events = [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X" and e.get("cat") != "user_annotation"]
    spans = sorted((e["ts"], e["ts"] + e["dur"]) for e in events)
    if not spans:
        return 0.0, 0.0, 0.0
    covered, end = 0.0, None
    for start, stop in spans:
        if end is None or start > end:
            covered += stop - start
            end = stop
        elif stop > end:
            covered += stop - end
            end = stop
    window = spans[-1][1] - spans[0][0]
    return window / steps / 1e3, covered / steps / 1e3, (window - covered) / steps / 1e3


def run(build, name, command, env_extra, workload, steps, warmup, trace_steps):
    trace_dir = tempfile.mkdtemp(prefix="accel-crossing-")
    try:
        env = dict(os.environ, OMP_NUM_THREADS="1", **env_extra)
        cmd = [os.path.join(build, "bin", "accel"), "launch", "--nproc_per_node", "2", "--master_port", "0",
               *command, "--workload", workload, "--steps", str(steps), "--warmup", str(warmup),
               "--threads", "1", "--trace-dir", trace_dir, "--trace-steps", str(trace_steps)]
        out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
        results = [json.loads(line.split("BENCH_RESULT ", 1)[1]) for line in out.stdout.splitlines()
                   if "BENCH_RESULT " in line]
        if out.returncode != 0 or len(results) != 2:
            sys.exit(f"crossing.py: {name} {workload} failed\n{out.stdout[-2000:]}{out.stderr[-2000:]}")
        split = [outside_share(os.path.join(trace_dir, f"trace_{r}.json"), trace_steps) for r in (0, 1)]
        if any(inside <= 0 or outside < 0 for _, inside, outside in split):
            sys.exit(f"crossing.py: {name} {workload}: a trace holds no time inside libaccel: {split}")
        return {"steps_per_s": min(r["steps_per_s"] for r in results),
                "window": max(s[0] for s in split), "inside": max(s[1] for s in split),
                "outside": max(s[2] for s in split)}
    finally:
        shutil.rmtree(trace_dir, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build-dir", default="build")
    parser.add_argument("--workloads", default="tiny,mlp")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--smoke", action="store_true")
    args = parser.parse_args()
    if args.smoke:
        args.rounds, args.workloads = 1, "tiny"
    build = os.path.abspath(args.build_dir)
    who = contestants(build, args.python)
    missing = sorted({"Python", "Java", "Go"} - who.keys())
    if missing:
        print("crossing.py: skipping " + ", ".join(missing) + " (not built here)")
    for workload in args.workloads.split(","):
        rows = {name: [] for name in who}
        names = list(who)
        for r in range(args.rounds):  # contestants alternate, starting at a different one each round
            for name in names[r % len(names):] + names[:r % len(names)]:
                counts = (5, 1, 3) if args.smoke else (STEPS[workload], 20, TRACE_STEPS[workload])
                rows[name].append(run(build, name, *who[name], workload, *counts))
        med = {name: {k: statistics.median(x[k] for x in runs) for k in runs[0]} for name, runs in rows.items()}
        floor = med["C++"]["outside"]
        print(f"\n{workload}, 2 processes x 1 thread, medians of {args.rounds} rounds (the slower rank of each run)")
        print("| contestant | steps/s | vs C++ | profiled step ms | inside libaccel ms | outside ms | crossing ms (outside - C++'s) |")
        print("|---|---:|---:|---:|---:|---:|---:|")
        for name, m in med.items():
            print(f"| {name} | {m['steps_per_s']:.0f} | {m['steps_per_s'] / med['C++']['steps_per_s']:.2f}x | "
                  f"{m['window']:.3f} | {m['inside']:.3f} | {m['outside']:.3f} | {m['outside'] - floor:+.3f} |")


if __name__ == "__main__":
    main()
