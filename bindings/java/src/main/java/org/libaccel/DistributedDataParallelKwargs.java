package org.libaccel;

import java.util.Locale;

/**
 * Accelerate's DistributedDataParallelKwargs: how prepared models sync gradients (docs/gradient-sync.md).
 * {@code new DistributedDataParallelKwargs().bucketCapMb(15).findUnusedParameters(true)}.
 */
public final class DistributedDataParallelKwargs extends KwargsHandler {
  private Double bucketCapMb;
  private Boolean findUnusedParameters, broadcastBuffers, gradientAsBucketView, staticGraph;
  private String commHook;

  public DistributedDataParallelKwargs bucketCapMb(double megabytes) {
    bucketCapMb = megabytes;
    return this;
  }

  public DistributedDataParallelKwargs findUnusedParameters(boolean find) {
    findUnusedParameters = find;
    return this;
  }

  /** Process 0's buffers at every training forward (default true). */
  public DistributedDataParallelKwargs broadcastBuffers(boolean broadcast) {
    broadcastBuffers = broadcast;
    return this;
  }

  public DistributedDataParallelKwargs gradientAsBucketView(boolean view) {
    gradientAsBucketView = view;
    return this;
  }

  /** Accepted: buckets are always fixed at prepare. */
  public DistributedDataParallelKwargs staticGraph(boolean isStatic) {
    staticGraph = isStatic;
    return this;
  }

  /** "no", "fp16" or "bf16" (gradient compression); PowerSGD hooks are refused. */
  public DistributedDataParallelKwargs commHook(String hook) {
    String name = hook.toLowerCase(Locale.ROOT);
    if (name.equals("power_sgd") || name.equals("batched_power_sgd")) {
      throw new IllegalArgumentException(
          "commHook \"" + hook + "\" is not supported by libaccel (no PowerSGD): use no, fp16 or bf16");
    }
    if (!name.equals("no") && !name.equals("fp16") && !name.equals("bf16")) {
      throw new IllegalArgumentException("commHook \"" + hook + "\" is not one of no, fp16, bf16");
    }
    commHook = name;
    return this;
  }

  @Override
  void applyTo(AcceleratorOptions o) {
    if (bucketCapMb != null) o.setBucketCapMb(bucketCapMb);
    if (findUnusedParameters != null) o.setFindUnusedParameters(findUnusedParameters);
    if (broadcastBuffers != null) o.setBroadcastBuffers(broadcastBuffers);
    if (gradientAsBucketView != null) o.setGradientAsBucketView(gradientAsBucketView);
    if (staticGraph != null) o.setStaticGraph(staticGraph);
    if (commHook != null) {
      o.setCommHook(commHook.equals("fp16") ? CommHook.COMM_HOOK_FP16
          : commHook.equals("bf16") ? CommHook.COMM_HOOK_BF16 : CommHook.COMM_HOOK_NONE);
    }
  }
}
