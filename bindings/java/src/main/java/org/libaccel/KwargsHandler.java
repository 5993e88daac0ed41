package org.libaccel;

/**
 * Accelerate's kwargs handlers, passed as {@code Accelerator.builder().kwargsHandlers(...)}: {@link
 * DistributedDataParallelKwargs}, {@link InitProcessGroupKwargs}, {@link GradScalerKwargs} and
 * {@link AutocastKwargs}. Only the settings a handler was given apply (Accelerate's to_kwargs);
 * one handler of each kind.
 */
public abstract class KwargsHandler {
  KwargsHandler() {}

  /** Writes the settings given to the options; IllegalArgumentException names a value libaccel refuses. */
  abstract void applyTo(AcceleratorOptions options);
}
