"""Run by test_distributed.py under `accel launch --parallelism_config_*`: prints this
process's coordinates in the mesh, as Accelerate's properties name them."""
import accel


def main():
    acc = accel.Accelerator(cpu=True)
    print(f"ranks dp_replicate={acc.data_parallel_rank} dp_shard={acc.data_parallel_shard_rank} "
          f"tp={acc.tensor_parallel_rank} cp={acc.context_parallel_rank} save={acc.should_save_model}", flush=True)
    acc.end_training()


if __name__ == "__main__":
    main()
