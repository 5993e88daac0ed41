package org.libaccel;

/**
 * Accelerate's DataLoaderConfiguration: how prepared loaders shard. Unset fields keep Accelerate's
 * defaults (dispatchBatches: iterable datasets are dispatched). nonBlocking and
 * useStatefulDataloader are reported by the accelerator as given (batches already reach a GPU
 * without blocking; saveState always records loader positions).
 */
public final class DataLoaderConfiguration {
  private Boolean splitBatches, dispatchBatches, evenBatches, useSeedableSampler, nonBlocking,
      useStatefulDataloader;
  private Long dataSeed;

  public DataLoaderConfiguration splitBatches(boolean split) {
    splitBatches = split;
    return this;
  }

  public DataLoaderConfiguration dispatchBatches(boolean dispatch) {
    dispatchBatches = dispatch;
    return this;
  }

  public DataLoaderConfiguration evenBatches(boolean even) {
    evenBatches = even;
    return this;
  }

  public DataLoaderConfiguration useSeedableSampler(boolean seedable) {
    useSeedableSampler = seedable;
    return this;
  }

  /** The seedable sampler's seed, &gt;= 0. */
  public DataLoaderConfiguration dataSeed(long seed) {
    dataSeed = seed;
    return this;
  }

  public DataLoaderConfiguration nonBlocking(boolean on) {
    nonBlocking = on;
    return this;
  }

  public DataLoaderConfiguration useStatefulDataloader(boolean on) {
    useStatefulDataloader = on;
    return this;
  }

  void applyTo(AcceleratorOptions o) {
    if (splitBatches != null) o.setSplitBatches(splitBatches);
    if (dispatchBatches != null) o.setDispatchBatches(dispatchBatches ? 1 : 0);
    if (evenBatches != null) o.setEvenBatches(evenBatches);
    if (useSeedableSampler != null) o.setUseSeedableSampler(useSeedableSampler);
    if (dataSeed != null) o.setDataSeed(dataSeed);
    if (nonBlocking != null) o.setNonBlocking(nonBlocking);
    if (useStatefulDataloader != null) o.setUseStatefulDataloader(useStatefulDataloader);
  }
}
