package org.libaccel;

/**
 * Accelerate's ParallelismConfig: the sizes of a device mesh's dimensions (docs/parallelism.md).
 * Tensor parallelism splits a JSON-spec model's transformer layers over tpSize consecutive ranks;
 * context parallelism cuts a JSON graph model's sequence over cpSize ranks (which see the same
 * batches); data parallelism runs over dpReplicateSize x dpShardSize, a sharding strategy over
 * dpShardSize x cpSize.
 * The sizes must multiply to the number of processes (checked when the accelerator is built).
 */
public final class ParallelismConfig {
  private long dpReplicateSize = 1, dpShardSize = 1, tpSize = 1, cpSize = 1;

  public ParallelismConfig() {}

  ParallelismConfig(long dpReplicateSize, long dpShardSize, long tpSize, long cpSize) {
    this.dpReplicateSize = dpReplicateSize;
    this.dpShardSize = dpShardSize;
    this.tpSize = tpSize;
    this.cpSize = cpSize;
  }

  public ParallelismConfig dpReplicateSize(long size) {
    dpReplicateSize = size;
    return this;
  }

  public ParallelismConfig dpShardSize(long size) {
    dpShardSize = size;
    return this;
  }

  public ParallelismConfig tpSize(long size) {
    tpSize = size;
    return this;
  }

  /** Context parallelism: a JSON graph model's sequence cut over this many ranks (docs/parallelism.md). */
  public ParallelismConfig cpSize(long size) {
    cpSize = size;
    return this;
  }

  public long dpReplicateSize() { return dpReplicateSize; }

  public long dpShardSize() { return dpShardSize; }

  public long tpSize() { return tpSize; }

  public long cpSize() { return cpSize; }

  @Override
  public boolean equals(Object other) {
    if (!(other instanceof ParallelismConfig)) return false;
    ParallelismConfig o = (ParallelismConfig) other;
    return dpReplicateSize == o.dpReplicateSize && dpShardSize == o.dpShardSize && tpSize == o.tpSize
        && cpSize == o.cpSize;
  }

  @Override
  public int hashCode() {
    return java.util.Objects.hash(dpReplicateSize, dpShardSize, tpSize, cpSize);
  }

  @Override
  public String toString() {
    return "ParallelismConfig(dp_replicate_size=" + dpReplicateSize + ", dp_shard_size=" + dpShardSize
        + ", tp_size=" + tpSize + ", cp_size=" + cpSize + ")";
  }
}
