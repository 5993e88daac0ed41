/* The Java code of Dataset, DataLoader, Sequences and the writers their
 * callbacks get (CollateWriter, SampleWriter).
 * Part of accel_java.i, which includes it before accel_core.i. */

%typemap(javacode) AccelDataset %{
  @Override
  public void close() {
    delete();
  }

  /** A map-style dataset whose samples a Java object writes (from loader threads when num_workers > 0). */
  public static Dataset fromMap(MapDataset dataset) {
    return Callbacks.fromMap(dataset);
  }

  /** An iterable (streaming) dataset whose samples a Java object writes. */
  public static Dataset fromIterable(IterableDataset dataset) {
    return Callbacks.fromIterable(dataset);
  }

  /**
   * A dataset over token sequences whose batches a Java collate function makes, with these field
   * names (in this order: {@link Batch#asMap} and the loader's fieldNames() use it).
   */
  public static Dataset fromSequences(Sequences sequences, java.util.List<String> names, CollateFunction function) {
    return Callbacks.fromSequences(sequences, names, function);
  }

  /**
   * Every *.safetensors file of directory, concatenated in file-name order; each name in
   * fields becomes one field of a sample (rows on dim 0).
   */
  public static Dataset fromSafetensors(String directory, String... fields) {
    return DataSupport.fromSafetensors(directory, fields);
  }
%}

%typemap(javacode) AccelDataLoader %{
  @Override
  public void close() {
    delete();
  }

  /** The names of the batches' fields, in order (Batch.asMap takes them). */
  public java.util.List<String> fieldNames() {
    return DataSupport.fieldNames(this);
  }

  /** A loader over a Java map-style dataset. */
  public static DataLoader of(MapDataset dataset, DataLoaderOptions options) {
    return DataSupport.of(dataset, options);
  }

  /** A loader over a Java iterable dataset. */
  public static DataLoader of(IterableDataset dataset, DataLoaderOptions options) {
    return DataSupport.of(dataset, options);
  }

  /**
   * A loader over a user's batch sampler: these batches of dataset indices, in order (e.g.
   * length-bucketed, of varying sizes), every epoch until {@link #setBatches} replaces them;
   * prepared, they are sharded as Accelerate's BatchSamplerShard does. options' batchSize is the sampler's nominal batch size (0: sizes vary,
   * which needs evenBatches(false) with several processes), its dropLast the sampler's; shuffle
   * must be off. Throws AccelException naming an empty batch or an index outside the dataset.
   */
  public static DataLoader ofBatches(MapDataset dataset, Iterable<? extends java.util.List<Long>> batches,
                                     DataLoaderOptions options) {
    return DataSupport.ofBatches(dataset, batches, options);
  }

  /** As {@link #ofBatches(MapDataset, Iterable, DataLoaderOptions)} over a native dataset. */
  public static DataLoader ofBatches(Dataset dataset, Iterable<? extends java.util.List<Long>> batches,
                                     DataLoaderOptions options) {
    return DataSupport.ofBatches(dataset, batches, options);
  }

  /**
   * New batches for a loader over a batch sampler (ofBatches, or Sequences' length-grouped
   * loader, which then stops regrouping), from the next epoch on: call it between epochs, before
   * an epoch's first batch (a resumed epoch's too, with that epoch's batches; see {@link
   * #epoch}), to follow a sampler that draws new batches each epoch. Every process must set the
   * same batches. Throws AccelException naming a bad batch (nothing changes), or with code STATE
   * during an epoch or for a loader made without a batch sampler.
   */
  public void setBatches(Iterable<? extends java.util.List<Long>> batches) {
    DataSupport.setBatches(this, batches);
  }

  /**
   * One epoch of batches; close each (try-with-resources) to free its tensors at once.
   * The next iterator() starts the next epoch.
   */
  @Override
  public java.util.Iterator<Batch> iterator() {
    return DataSupport.epoch(this);
  }
%}

%typemap(javacode) AccelSequences %{
  @Override
  public void close() {
    delete();
  }

  /**
   * Sequences in one flat array: sequence i is ids[offsets[i], offsets[i + 1]); labels (empty or
   * one per sequence) are class labels; vocabSize &gt; 0 refuses ids &gt;= it.
   */
  public static Sequences fromArrays(long[] ids, long[] offsets, long[] labels, long vocabSize) {
    return DataSupport.fromArrays(ids, offsets, labels, vocabSize);
  }

  /** Sequences copied from Java arrays of ids; vocabSize &gt; 0 refuses ids &gt;= it. */
  public static Sequences of(long vocabSize, long[]... sequences) {
    return DataSupport.of(vocabSize, sequences);
  }
%}

%typemap(javacode) CollateWriter %{
  @Override
  public void close() {
    delete();
  }
%}

%typemap(javacode) SampleWriter %{
  @Override
  public void close() {
    delete();
  }
%}
