"""notebook_launcher and debug_launcher: a function defined in the launching script (as in a
notebook) runs in forked processes that form one run; a failing process stops the others. Each
case runs in a fresh interpreter, as a notebook kernel would: forking a process that has already
run LibTorch's threads (pytest's, after other tests) is what the launcher's docs warn against."""
import json
import subprocess
import sys
import textwrap

from ports import reserve_port


def run(code):
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=180)


def test_notebook_launcher_runs_one_job_in_forked_processes(tmp_path):
    (tmp_path / "debug").mkdir()
    result = run(f"""
        import json
        import accel

        def training_function(out_dir):
            acc = accel.Accelerator(cpu=True)
            ranks = acc.gather_object([acc.process_index])
            with open(f"{{out_dir}}/rank{{acc.process_index}}.json", "w") as f:
                json.dump({{"ranks": ranks, "world": acc.num_processes, "mp": acc.mixed_precision,
                           "cpu": acc.device, "forked": acc.state.fork_launched}}, f)
            acc.wait_for_everyone()

        accel.notebook_launcher(training_function, args=({str(tmp_path)!r},), num_processes=3,
                                mixed_precision="bf16", use_port="{reserve_port()}")
        accel.debug_launcher(training_function, args=({str(tmp_path / 'debug')!r},), num_processes=2,
                             use_port="{reserve_port()}")
        print("launched")
    """)
    assert result.returncode == 0, result.stdout + result.stderr
    for rank in range(3):
        seen = json.loads((tmp_path / f"rank{rank}.json").read_text())
        assert seen == {"ranks": [0, 1, 2], "world": 3, "mp": "bf16", "cpu": "cpu", "forked": True}
    for rank in range(2):
        seen = json.loads((tmp_path / "debug" / f"rank{rank}.json").read_text())
        assert seen == {"ranks": [0, 1], "world": 2, "mp": "no", "cpu": "cpu", "forked": True}


def test_a_failing_process_stops_the_others_and_is_named():
    result = run(f"""
        import accel

        def training_function():
            acc = accel.Accelerator(cpu=True, timeout_ms=600000)
            if acc.process_index == 1:
                raise ValueError("rank 1 gives up")
            acc.wait_for_everyone()  # never completes: the launcher stops this process

        try:
            accel.notebook_launcher(training_function, num_processes=2, use_port="{reserve_port()}")
        except RuntimeError as error:
            print("raised:", error)
    """)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "raised: process 1 of 2 failed (exit code 1)" in result.stdout
    assert "ValueError: rank 1 gives up" in result.stderr


def test_refusals():
    result = run("""
        import accel
        for kwargs in ({"rdzv_backend": "c10d"}, {"max_restarts": 2}, {"mixed_precision": "fp32"},
                       {"num_processes": 0, "num_nodes": 2}, {"node_rank": 2, "num_nodes": 2, "num_processes": 2}):
            try:
                accel.notebook_launcher(print, **kwargs)
            except (ValueError, TypeError) as error:
                print("refused:", error)
    """)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count("refused:") == 5, result.stdout
