"""Run by test_accelerate_names.py under `accel launch`: get_tracker on every rank, as
Accelerate's loop calls it. The main process gets the running tracker and writes; the others get
Accelerate's blank tracker and write nothing (and an unknown name is no error there)."""
import sys

import accel


def main():
    acc = accel.Accelerator(cpu=True, log_with="jsonl", logging_dir=sys.argv[1])
    acc.init_trackers("run")
    tracker = acc.get_tracker("jsonl")
    if acc.is_main_process:
        assert isinstance(tracker, accel.BuiltinTracker), type(tracker)
    else:
        assert type(tracker) is accel.Tracker, type(tracker)
        assert type(acc.get_tracker("wandb")) is accel.Tracker  # nothing runs here: blank, as Accelerate
    tracker.log({"rank": float(acc.process_index)}, step=acc.process_index)
    acc.end_training()
    print("tracker ok", flush=True)


if __name__ == "__main__":
    main()
