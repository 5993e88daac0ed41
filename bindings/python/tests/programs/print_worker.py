"""Run by test_state_attributes.py, under `accel launch` or as one process of a
two-machine run: Accelerate's print is once per machine (each machine's local
main process prints), through the binding and through the C library."""
import sys

import accel


def main(tag):
    with accel.Accelerator(cpu=True) as acc:
        rank = acc.process_index
        acc.print(f"[{tag}] accelerator.print from rank", rank, sep=" ", flush=True)
        acc.state.print(f"[{tag}] state.print from rank {rank}", flush=True)
        accel.core.Accelerator._print(acc, f"[{tag}] C print from rank {rank}")  # what Java and Go call
        state = accel.PartialState(cpu=True)
        state.print(f"[{tag}] partial state print from rank {rank}", end="\n", flush=True)
        print(f"[{tag}] rank {rank} backend {state.backend} state.backend {acc.state.backend}", flush=True)
        acc.wait_for_everyone()
        state.destroy_process_group()
        assert not state.initialized and acc.state.initialized  # the accelerator still holds the group


if __name__ == "__main__":
    main(sys.argv[1])
