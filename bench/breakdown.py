#!/usr/bin/env python3
"""Runs bench/step_breakdown for each workload under `accel launch` and prints
the per-rank table of docs/benchmarks.md (ms per step, medians over rounds).

  bench/breakdown.py [--build-dir build] [--workloads tiny,mlp,sync] [--nproc 2] [--rounds 5]
"""
import argparse
import json
import os
import subprocess
import sys

STEPS = {"tiny": 400, "mlp": 30, "sync": 3, "cnn": 2}
SYNC_SPANS = ["accel::grad_sync::bucket_copy", "accel::grad_sync::launch", "accel::grad_sync::wait",
              "accel::grad_sync::unbucket"]


def run(build, workload, nproc, rounds):
    env = dict(os.environ, OMP_NUM_THREADS="1")
    cmd = [os.path.join(build, "bin", "accel"), "launch", "--nproc_per_node", str(nproc), "--master_port", "0",
           os.path.join(build, "bin", "step_breakdown"), "--workload", workload, "--steps", str(STEPS[workload]),
           "--warmup", "1", "--threads", "1", "--rounds", str(rounds)]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1200)
    rows = [json.loads(line.split("BREAKDOWN ", 1)[1]) for line in out.stdout.splitlines() if "BREAKDOWN " in line]
    if len(rows) != nproc:
        sys.exit(f"breakdown.py: {workload}: expected {nproc} result lines\n{out.stdout[-2000:]}{out.stderr[-2000:]}")
    return sorted(rows, key=lambda r: r["rank"])


def table(rows):
    span = lambda r, name: r["spans"].get(name, 0.0)
    lines = [
        ("no-communication step", lambda r: r["nocomm_ms"]),
        ("raw c10d Gloo allreduce, same bytes", lambda r: r["raw_allreduce_ms"]),
        ("library allreduce (Gloo on the calling thread), same bytes", lambda r: r["direct_ms"]),
        ("serial bound (no-comm + raw c10d allreduce)", lambda r: r["nocomm_ms"] + r["raw_allreduce_ms"]),
        ("by hand: backward, then one allreduce", lambda r: r["manual_ms"]),
        ("synced step", lambda r: r["synced_ms"]),
        ("synced step, every allreduce by c10d Gloo", lambda r: r["synced_c10d_ms"]),
        ("  share of the serial bound", None),
        ("synced step, spans observed", lambda r: r["spanned_ms"]),
        ("  zero_grad", lambda r: span(r, "accel::optimizer::zero_grad")),
        ("  forward", lambda r: span(r, "accel::forward")),
        ("  backward compute", lambda r: span(r, "accel::backward") - sum(span(r, s) for s in SYNC_SPANS)),
        ("  bucket copy + 1/world scaling", lambda r: span(r, "accel::grad_sync::bucket_copy")),
        ("  allreduce launch", lambda r: span(r, "accel::grad_sync::launch")),
        ("  waiting on the allreduce", lambda r: span(r, "accel::grad_sync::wait")),
        ("  gradients out of buckets", lambda r: span(r, "accel::grad_sync::unbucket")),
        ("  optimizer step", lambda r: span(r, "accel::optimizer::step")),
        ("  loss and the rest", lambda r: r["spanned_ms"] - sum(
            span(r, s) for s in ["accel::optimizer::zero_grad", "accel::forward", "accel::backward",
                                 "accel::optimizer::step"])),
    ]
    head = "| ms per step | " + " | ".join(f"rank {r['rank']}" for r in rows) + " |"
    print(head)
    print("|---|" + "---|" * len(rows))
    for label, f in lines:
        if f is None:
            cells = [f"{100 * (r['nocomm_ms'] + r['raw_allreduce_ms']) / r['synced_ms']:.0f}%" for r in rows]
        else:
            cells = [f"{f(r):.3f}" for r in rows]
        print(f"| {label} | " + " | ".join(cells) + " |")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build-dir", default=os.path.join(os.path.dirname(__file__), "..", "build"))
    parser.add_argument("--workloads", default="tiny,mlp,sync")
    parser.add_argument("--nproc", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=5)
    a = parser.parse_args()
    for workload in a.workloads.split(","):
        rows = run(a.build_dir, workload, a.nproc, a.rounds)
        print(f"\n### {workload}: {a.nproc} processes x 1 thread, {rows[0]['param_bytes'] / 1e6:.2f} MB of "
              f"parameters, {STEPS[workload]} steps x {a.rounds} rounds\n")
        table(rows)


if __name__ == "__main__":
    main()
