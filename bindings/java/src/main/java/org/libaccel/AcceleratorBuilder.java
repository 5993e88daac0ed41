package org.libaccel;

import java.util.Locale;
import java.util.function.Consumer;

/**
 * Accelerator options with Accelerate's names, chained:
 * {@code Accelerator.builder().cpu(true).gradientAccumulationSteps(4).mixedPrecision("bf16").build()}.
 * Every option the C API has is reachable through {@link #options(Consumer)}.
 */
public final class AcceleratorBuilder {
  private final AcceleratorOptions options = new AcceleratorOptions();
  private long iteration;  // ProjectConfiguration's, applied once built

  AcceleratorBuilder() {}

  /** Use the CPU even where a GPU is present. */
  public AcceleratorBuilder cpu(boolean cpu) {
    options.setCpu(cpu);
    return this;
  }

  public AcceleratorBuilder mixedPrecision(MixedPrecision precision) {
    options.setMixedPrecision(precision);
    return this;
  }

  /** "no", "fp16", "bf16" or "fp8", as in Accelerate. */
  public AcceleratorBuilder mixedPrecision(String precision) {
    switch (precision.toLowerCase(Locale.ROOT)) {
      case "no": return mixedPrecision(MixedPrecision.PRECISION_NO);
      case "fp16": return mixedPrecision(MixedPrecision.PRECISION_FP16);
      case "bf16": return mixedPrecision(MixedPrecision.PRECISION_BF16);
      case "fp8": return mixedPrecision(MixedPrecision.PRECISION_FP8);
      default:
        throw new IllegalArgumentException("mixedPrecision \"" + precision + "\" is not one of no, fp16, bf16, fp8");
    }
  }

  /** ACCELERATE_GRADIENT_ACCUMULATION_STEPS (accel launch --gradient_accumulation_steps) wins, as in Accelerate. */
  public AcceleratorBuilder gradientAccumulationSteps(long steps) {
    options.setGradientAccumulationSteps(steps);
    return this;
  }

  /** GradientAccumulationPlugin.sync_each_batch: average gradients on every micro-step too. */
  public AcceleratorBuilder syncEachBatch(boolean sync) {
    options.setSyncEachBatch(sync);
    return this;
  }

  /** GradientAccumulationPlugin.adjust_scheduler: micro-step scheduler calls count towards OneCycle's total_steps. */
  public AcceleratorBuilder adjustScheduler(boolean adjust) {
    options.setAdjustScheduler(adjust);
    return this;
  }

  /**
   * Accelerate's step_scheduler_with_optimizer (default true): a prepared scheduler steps only
   * after a real optimizer step, numProcesses times without splitBatches. false: every step()
   * call advances it once.
   */
  public AcceleratorBuilder stepSchedulerWithOptimizer(boolean step) {
    options.setStepSchedulerWithOptimizer(step);
    return this;
  }

  public AcceleratorBuilder splitBatches(boolean split) {
    options.setSplitBatches(split);
    return this;
  }

  public AcceleratorBuilder evenBatches(boolean even) {
    options.setEvenBatches(even);
    return this;
  }

  /** Unset (the default): Accelerate's rule, iterable datasets are dispatched. */
  public AcceleratorBuilder dispatchBatches(boolean dispatch) {
    options.setDispatchBatches(dispatch ? 1 : 0);
    return this;
  }

  /** Shuffle with dataSeed (else the seed given to setSeed) + epoch: Accelerate's SeedableRandomSampler. */
  public AcceleratorBuilder useSeedableSampler(boolean seedable) {
    options.setUseSeedableSampler(seedable);
    return this;
  }

  /** The seedable sampler's seed, >= 0. */
  public AcceleratorBuilder dataSeed(long seed) {
    options.setDataSeed(seed);
    return this;
  }

  public AcceleratorBuilder devicePlacement(boolean placement) {
    options.setDevicePlacement(placement);
    return this;
  }

  /** Checkpoints and logs go under it. */
  public AcceleratorBuilder projectDir(String dir) {
    options.setProjectDir(dir);
    return this;
  }

  public AcceleratorBuilder loggingDir(String dir) {
    options.setLoggingDir(dir);
    return this;
  }

  /** saveState() without a directory writes projectDir/checkpoints/checkpoint_{i}. */
  public AcceleratorBuilder automaticCheckpointNaming(boolean automatic) {
    options.setAutomaticCheckpointNaming(automatic);
    return this;
  }

  /** Automatic checkpoints kept (oldest removed); 0: all. */
  public AcceleratorBuilder totalLimit(long limit) {
    options.setTotalLimit(limit);
    return this;
  }

  /** Built-in trackers: "jsonl", "csv", "tensorboard", "mlflow", "wandb", "dvclive", "trackio", "aim", "comet_ml", "all". */
  public AcceleratorBuilder logWith(String... trackers) {
    options.setLogWith(String.join(",", trackers));
    return this;
  }

  public AcceleratorBuilder timeoutMs(long timeoutMs) {
    options.setTimeoutMs(timeoutMs);
    return this;
  }

  public AcceleratorBuilder commHook(CommHook hook) {
    options.setCommHook(hook);
    return this;
  }

  /** Sharded data parallel (docs/sharding.md); unset: from accel launch's environment, else NO_SHARD. */
  public AcceleratorBuilder shardingStrategy(ShardingStrategy strategy) {
    options.setShardingStrategy(strategy);
    return this;
  }

  /**
   * "NO_SHARD", "SHARD_OPTIMIZER" (ZeRO-1), "SHARD_GRAD_OP" (ZeRO-2), "FULL_SHARD" (ZeRO-3) or
   * "HYBRID_SHARD" (FULL_SHARD within each node, replicated across nodes).
   */
  public AcceleratorBuilder shardingStrategy(String strategy) {
    switch (strategy) {
      case "NO_SHARD": return shardingStrategy(ShardingStrategy.SHARDING_NO_SHARD);
      case "SHARD_OPTIMIZER": return shardingStrategy(ShardingStrategy.SHARDING_SHARD_OPTIMIZER);
      case "SHARD_GRAD_OP": return shardingStrategy(ShardingStrategy.SHARDING_SHARD_GRAD_OP);
      case "FULL_SHARD": return shardingStrategy(ShardingStrategy.SHARDING_FULL_SHARD);
      case "HYBRID_SHARD": return shardingStrategy(ShardingStrategy.SHARDING_HYBRID_SHARD);
      default:
        throw new IllegalArgumentException("shardingStrategy \"" + strategy
            + "\" is not one of NO_SHARD, SHARD_OPTIMIZER, SHARD_GRAD_OP, FULL_SHARD, HYBRID_SHARD");
    }
  }

  /**
   * FULL_SHARD's wrap units (Accelerate's fsdp_min_num_params): 0 one unit per layer; n &gt; 0
   * layers grouped until they hold n parameters. Unset: from accel launch's FSDP settings.
   */
  public AcceleratorBuilder fsdpMinNumParams(long minNumParams) {
    options.setFsdpMinNumParams(minNumParams);
    return this;
  }

  /**
   * FSDP's activation checkpointing of FULL_SHARD's units: a unit keeps only its input and runs
   * again in backward. With another strategy, build() throws AccelException (UNSUPPORTED).
   */
  public AcceleratorBuilder fsdpActivationCheckpointing(boolean on) {
    options.setFsdpActivationCheckpointing(on ? 1 : 0);
    return this;
  }

  /**
   * FSDP's transformer_auto_wrap_policy (Accelerate's fsdp_transformer_layer_cls_to_wrap): the
   * TorchScript submodules whose class ("GPT2Block") or path ("transformer.h.0") is listed become
   * FULL_SHARD units of their own, the rest of the model one root unit; in a JSON spec, the layers
   * of these types ("TransformerEncoderLayer") or names. Unset: from accel launch's
   * FSDP settings. An empty name makes build() throw AccelException (INVALID_ARGUMENT); a name that
   * matches no submodule makes prepare throw it, naming the model's classes.
   */
  public AcceleratorBuilder fsdpTransformerLayerClsToWrap(String... classNames) {
    options.setFsdpTransformerLayerClsToWrap(String.join(",", classNames));
    return this;
  }

  /**
   * FSDP's backward_prefetch (default on unless FSDP_BACKWARD_PREFETCH=NO_PREFETCH): while a
   * FULL_SHARD unit runs its backward, the next unit's all-gather is in flight.
   */
  public AcceleratorBuilder fsdpBackwardPrefetch(boolean on) {
    options.setFsdpBackwardPrefetch(on ? 1 : 0);
    return this;
  }

  /**
   * FSDP's state_dict_type for saveState under a sharding strategy (default: FSDP_STATE_DICT_TYPE,
   * else FULL_STATE_DICT): "SHARDED_STATE_DICT" writes PyTorch distributed checkpoints
   * (pytorch_model_fsdp_0/, optimizer_0/, which Accelerate and torch.distributed.checkpoint read),
   * "FULL_STATE_DICT" libaccel's own per-process files. Another value fails at build().
   */
  public AcceleratorBuilder fsdpStateDictType(String type) {
    options.setFsdpStateDictType(type);
    return this;
  }

  /** FSDP's forward_prefetch (default: FSDP_FORWARD_PREFETCH, else off): the same in the forward. */
  public AcceleratorBuilder fsdpForwardPrefetch(boolean on) {
    options.setFsdpForwardPrefetch(on ? 1 : 0);
    return this;
  }

  /**
   * CPU offload (Accelerate's fsdp_offload_params, DeepSpeed's offload devices "cpu"): a sharded
   * model's master weights, gradients and optimizer state live in host memory and the optimizer
   * steps there. Default: from the launcher's environment, else off. On with NO_SHARD fails with
   * UNSUPPORTED when the accelerator is built.
   */
  public AcceleratorBuilder cpuOffload(boolean on) {
    options.setCpuOffload(on ? 1 : 0);
    return this;
  }

  /**
   * Accelerate's ParallelismConfig (docs/parallelism.md). Default: from the launcher's environment
   * (accel launch --parallelism_config_*), else none. Sizes that do not multiply to the number of
   * processes fail at build().
   */
  public AcceleratorBuilder parallelismConfig(ParallelismConfig config) {
    // A size of 0 counts as 1 in the options; all four 0 would mean "none".
    options.setParallelismDpReplicateSize(config.dpReplicateSize() == 0 ? 1 : config.dpReplicateSize());
    options.setParallelismDpShardSize(config.dpShardSize());
    options.setParallelismTpSize(config.tpSize());
    options.setParallelismCpSize(config.cpSize());
    return this;
  }

  public AcceleratorBuilder findUnusedParameters(boolean find) {
    options.setFindUnusedParameters(find);
    return this;
  }

  /** DDP's broadcast_buffers (default true): process 0's buffers at every training forward. */
  public AcceleratorBuilder broadcastBuffers(boolean broadcast) {
    options.setBroadcastBuffers(broadcast);
    return this;
  }

  /**
   * Accelerate's kwargs_handlers: DistributedDataParallelKwargs, InitProcessGroupKwargs,
   * GradScalerKwargs, AutocastKwargs, one of each; only the settings a handler was given apply.
   * Two handlers of one kind throw IllegalArgumentException naming it.
   */
  public AcceleratorBuilder kwargsHandlers(KwargsHandler... handlers) {
    java.util.Set<Class<?>> seen = new java.util.HashSet<>();
    for (KwargsHandler handler : handlers) {
      if (handler == null) throw new IllegalArgumentException("kwargsHandlers: a handler is null");
      if (!seen.add(handler.getClass())) {
        throw new IllegalArgumentException(
            "You can only pass one " + handler.getClass().getSimpleName() + " in kwargsHandlers");
      }
    }
    for (KwargsHandler handler : handlers) handler.applyTo(options);
    return this;
  }

  /** Accelerate's dataloader_config: the settings it was given apply. */
  public AcceleratorBuilder dataloaderConfig(DataLoaderConfiguration config) {
    config.applyTo(options);
    return this;
  }

  /** Accelerate's project_config; its iteration is the number of the next automatic checkpoint. */
  public AcceleratorBuilder projectConfig(ProjectConfiguration config) {
    config.applyTo(options);
    iteration = config.iteration();
    return this;
  }

  /**
   * Accelerate's rng_types: the generators every process takes from process 0 at each epoch's
   * start of a prepared loader ("torch", "cuda", "generator"; default "generator"). None given:
   * no generator is synchronized.
   */
  public AcceleratorBuilder rngTypes(String... types) {
    options.setRngTypes(String.join(",", types));
    return this;
  }

  /** Any other option, set on the options struct directly. */
  public AcceleratorBuilder options(Consumer<AcceleratorOptions> configure) {
    configure.accept(options);
    return this;
  }

  /** A new accelerator (the builder can build more). Bad options throw AccelException naming them. */
  public Accelerator build() {
    Accelerator accelerator = new Accelerator(options);
    // Read back from the options, where options(Consumer) may have set them too.
    String project =
        options.getProjectDir() == null || options.getProjectDir().isEmpty() ? "." : options.getProjectDir();
    String logging = options.getLoggingDir() == null || options.getLoggingDir().isEmpty()
        ? java.nio.file.Paths.get(project, "logs").toString()
        : options.getLoggingDir();
    accelerator.setDirectories(project, logging);
    if (iteration > 0) accelerator.setSaveIteration(iteration);
    return accelerator;
  }
}
