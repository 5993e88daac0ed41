"""Run by test_accelerate_parity.py under `accel launch`: Accelerate's
tests/test_scheduler.py (lambda_test, one_cycle_test) from inside every process.
argv[1] == "split" turns split_batches on."""
import sys

import accel

LINEAR = '[{"type": "Linear", "in_features": 2, "out_features": 4}]'


def main():
    split = len(sys.argv) > 1 and sys.argv[1] == "split"
    acc = accel.Accelerator(cpu=True, split_batches=split, gradient_accumulation_steps=2, timeout_ms=30000)
    n = acc.num_processes
    model = accel.Model.from_json(LINEAR)
    acc.prepare(model)
    for with_optimizer in (True, False):
        opt = accel.Optimizer(model, "adamw", lr=1.0)
        # PyTorch's LambdaLR(lambda n: 1 - n / 10) is "linear" from factor 1 to 0 over 10 steps.
        sched = accel.Scheduler(opt, "linear", start_factor=1.0, end_factor=0.0, total_iters=10,
                                step_with_optimizer=with_optimizer)
        acc.prepare(opt, sched)
        sched.step()  # the optimizer has stepped
        expected = 1 - (n if with_optimizer and not split else 1) / 10
        assert abs(sched.get_last_lr() - expected) < 1e-12, (with_optimizer, sched.get_last_lr(), expected)
        with acc.accumulate(model):  # a micro-step: the optimizer has not stepped
            assert not acc.sync_gradients
            sched.step()
        with acc.accumulate(model):  # completes the window
            pass
        if not with_optimizer:
            expected = 1 - 2 / 10
        assert abs(sched.get_last_lr() - expected) < 1e-12, (with_optimizer, sched.get_last_lr(), expected)

        cycle_opt = accel.Optimizer(model, "adamw", lr=1.0)
        # OneCycleLR(max_lr=0.01, steps_per_epoch=2, epochs=1)
        cycle = accel.Scheduler(cycle_opt, "one_cycle", max_lr=0.01, total_steps=2,
                                step_with_optimizer=with_optimizer)
        acc.prepare(cycle_opt, cycle)
        cycle.step()
        want = 1 if (not with_optimizer or split) else min(n, 2)
        assert cycle.last_epoch() == want, (with_optimizer, cycle.last_epoch(), want)
    print(f"[rank {acc.process_index}] scheduler parity ok {n}{' split' if split else ''}", flush=True)


if __name__ == "__main__":
    main()
