/* The Java code of ProgressBar, PartialState, Profile, the checkpoint
 * callbacks' StateWriter and Accelerator.
 * Part of accel_java.i, which includes it before accel_core.i. */

%typemap(javacode) AccelProgress %{
  @Override
  public void close() {
    delete();
  }
%}

%typemap(javacode) AccelPartialState %{
  public boolean isMainProcess() {
    return processIndex() == 0;
  }

  public boolean isLocalMainProcess() {
    return localProcessIndex() == 0;
  }

  public boolean isLastProcess() {
    return processIndex() == numProcesses() - 1;
  }

  /** Whether more than one process runs (Accelerate's use_distributed). */
  public boolean useDistributed() {
    return numProcesses() > 1;
  }

  /** Runs body on the main process first, then on the others (Accelerate's main_process_first). */
  public void mainProcessFirst(Runnable body) {
    if (!isMainProcess()) waitForEveryone();
    try {
      body.run();
    } finally {
      if (isMainProcess()) waitForEveryone();
    }
  }

  /** This process's share of items, as Accelerator.splitBetweenProcesses (padding repeats the last item). */
  public <T> java.util.List<T> splitBetweenProcesses(java.util.List<T> items, boolean applyPadding) {
    Int64Vector v = splitRange(items.size(), applyPadding);
    try {
      return Nested.split(items, new long[] {v.get(0), v.get(1), v.get(2)});
    } finally {
      v.delete();
    }
  }

  @Override
  public void close() {
    delete();
  }
%}

%rename(nativeStep) AccelProfileRun::step;
%javamethodmodifiers AccelProfileRun::step "";
%javamethodmodifiers AccelProfileRun::begin_scheduled "";
%typemap(javacode) AccelProfileRun %{
  private java.util.function.Consumer<Profile> onTraceReady;
  private long stepNum;
  private String tracePath;

  Profile withTrace(String path, java.util.function.Consumer<Profile> callback) {
    tracePath = path;
    onTraceReady = callback;
    return this;
  }

  /**
   * The end of a training step (torch.profiler's prof.step()): advances ProfileKwargs' schedule,
   * and calls its onTraceReady when a cycle's trace was just written.
   */
  public void step() {
    ++stepNum;
    if (nativeStep() && onTraceReady != null) onTraceReady.accept(this);
  }

  /** Steps taken so far. */
  public long stepNum() {
    return stepNum;
  }

  /** The trace file: the last finished cycle under a schedule. */
  public String tracePath() {
    return tracePath;
  }

  /** Ends the profile (writing its trace) if it is running, then frees it. */
  @Override
  public void close() {
    delete();
  }
%}

%typemap(javacode) StateWriter %{
  @Override
  public void close() {
    delete();
  }

  /** Appends bytes to the object's state. */
  public void write(byte[] data) {
    jniWrite(data);
  }
%}

%typemap(javaimports) AccelAccelerator %{
import java.util.List;
import java.util.Map;
%}
%typemap(javacode) AccelAccelerator %{
  /** Ends training for the trackers added to it, then frees the accelerator and them. */
  @Override
  public void close() {
    delete();
  }

  /** A builder of accelerator options with Accelerate's names. */
  public static AcceleratorBuilder builder() {
    return new AcceleratorBuilder();
  }

  /**
   * The java.util.Random that setSeed reseeds: Java's counterpart of the random and numpy
   * generators Accelerate's set_seed seeds in Python. Draw shuffles, augmentation or
   * dropout masks made in Java from it and a seeded run repeats exactly. Thread-safe.
   */
  public static java.util.Random random() {
    return AcceleratorSupport.RANDOM;
  }

  /** setSeed(seed, false, false). */
  public void setSeed(long seed) {
    setSeed(seed, false, false);
  }

  /**
   * Accelerate's set_seed: seeds LibTorch's generators (CPU and CUDA) and {@link #random()}.
   * With deviceSpecific each process uses seed + processIndex() (ranks differ, reproducibly);
   * with deterministic LibTorch uses deterministic algorithms from now on in this process
   * (false leaves that setting as it is). Not collective. The seed is unsigned 64-bit.
   */
  public void setSeed(long seed, boolean deviceSpecific, boolean deterministic) {
    AcceleratorSupport.setSeed(this, seed, deviceSpecific, deterministic);
  }

  /**
   * Accelerate's get_state_dict: the model's parameters, then its buffers, as CPU copies in
   * the model's order. The caller closes the tensors. Not collective.
   */
  public java.util.LinkedHashMap<String, Tensor> getStateDict(Model model) {
    return AcceleratorSupport.getStateDict(this, model);
  }

  private String projectDir = ".";
  private String loggingDir = "logs";

  void setDirectories(String projectDir, String loggingDir) {
    this.projectDir = projectDir;
    this.loggingDir = loggingDir;
  }

  /** Accelerate's project_dir: where checkpoints and logs go ("." unless the builder set one). */
  public String projectDir() {
    return projectDir;
  }

  /** Accelerate's logging_dir: tracker output (projectDir/logs unless the builder set one). */
  public String loggingDir() {
    return loggingDir;
  }

  /** The mesh in use; without a ParallelismConfig, dpReplicateSize is the number of processes. */
  public ParallelismConfig parallelismConfig() {
    return AcceleratorSupport.parallelismConfig(this);
  }

  /**
   * This process's rank along dp_replicate: the process index read row-major over dp_replicate x
   * dp_shard x cp x tp, tp innermost (Accelerate's data_parallel_rank). Without a
   * ParallelismConfig, the process index.
   */
  public long dataParallelRank() {
    return AcceleratorSupport.parallelismRank(this, 0);
  }

  /** This process's rank along dp_shard (Accelerate's data_parallel_shard_rank). */
  public long dataParallelShardRank() {
    return AcceleratorSupport.parallelismRank(this, 1);
  }

  /** This process's rank in its tensor-parallel group: processIndex() % tpSize. */
  public long tensorParallelRank() {
    return AcceleratorSupport.parallelismRank(this, 2);
  }

  /** This process's rank along cp: which block of the sequence it computes. */
  public long contextParallelRank() {
    return AcceleratorSupport.parallelismRank(this, 3);
  }

  /**
   * Bytes this process holds for the prepared model's parameters and gradients and the
   * optimizer's state (optimizer may be null), counted from the tensors' storages: keys
   * "parameters", "gradients", "optimizer_state". Not collective.
   */
  public java.util.LinkedHashMap<String, Long> heldBytes(Model model, Optimizer optimizer) {
    return AcceleratorSupport.heldBytes(this, model, optimizer);
  }

  /**
   * Accelerate's load_checkpoint_in_model (strict=False): loads path's tensors into model and
   * returns {missing, unexpected}, the counts of names the file lacks or the model lacks.
   */
  public long[] loadCheckpointInModel(Model model, String path) {
    return loadCheckpointInModel(model, path, false);
  }

  /** As loadCheckpointInModel(model, path); strict: a missing or unexpected name throws AccelException. */
  public long[] loadCheckpointInModel(Model model, String path, boolean strict) {
    return AcceleratorSupport.loadCheckpointInModel(this, model, path, strict);
  }

  /** Whether this is the highest global rank (Accelerate's is_last_process). */
  public boolean isLastProcess() {
    return processIndex() == numProcesses() - 1;
  }

  /** Accelerate's use_distributed: the run has several processes. */
  public boolean useDistributed() {
    return numProcesses() > 1;
  }

  /** Accelerate's multi_device: several processes, each on its own GPU. */
  public boolean multiDevice() {
    return useDistributed() && distributedType() == DistributedType.DISTRIBUTED_MULTI_GPU;
  }

  /**
   * Prepares models, optimizers, data loaders and schedulers, in any order (models first,
   * as Accelerate does). Collective with several processes.
   */
  public void prepare(Object... objects) {
    AcceleratorSupport.prepare(this, objects);
  }

  /** Gradient accumulation: {@code try (Scope s = acc.accumulate(model)) { ... }}. */
  public Scope accumulate(Model model) {
    return AcceleratorSupport.accumulate(this, model);
  }

  /** Local gradient accumulation without synchronisation. */
  public Scope noSync(Model model) {
    return AcceleratorSupport.noSync(this, model);
  }

  /**
   * Mixed-precision autocast per the accelerator's mixed_precision, on unless an AutocastKwargs
   * given at build turned it off.
   */
  public Scope autocast() {
    autocastBeginDefault();
    return this::autocastEnd;
  }

  public Scope autocast(boolean enabled) {
    return AcceleratorSupport.autocast(this, enabled);
  }

  /** Accelerate's autocast(autocast_handler=...): this scope on or off as the handler says. */
  public Scope autocast(AutocastKwargs handler) {
    return AcceleratorSupport.autocast(this, handler.enabled());
  }

  /**
   * torch.no_grad() for evaluation: no autograd graph on this thread until the scope closes
   * (close it on the thread that opened it). Scopes nest.
   */
  public Scope noGrad() {
    return AcceleratorSupport.noGrad(this);
  }

  /** The main process runs the block first, the others after it. Collective. */
  public Scope mainProcessFirst() {
    return AcceleratorSupport.mainProcessFirst(this);
  }

  /** Each node's local main process first. Collective. */
  public Scope localMainProcessFirst() {
    return AcceleratorSupport.localMainProcessFirst(this);
  }

  public Scope joinUnevenInputs() {
    return AcceleratorSupport.joinUnevenInputs(this);
  }

  /** Records LibTorch operators until closed; writes outputTraceDir/trace_<rank>.json. */
  public Profile profile(String outputTraceDir) {
    return Profile.begin(this, outputTraceDir);
  }

  /** profile(outputTraceDir) with what kwargs records besides the operators (shapes, memory, flops). */
  public Profile profile(ProfileKwargs kwargs) {
    return kwargs.begin(this);
  }

  /** Java objects saved and restored with every saveState (see Checkpointable). */
  public void registerForCheckpointing(Checkpointable... objects) {
    AcceleratorSupport.registerForCheckpointing(this, objects);
  }

  /** hook(directory) runs before saveState writes. */
  public RemovableHandle registerSaveStatePreHook(DirectoryHook hook) {
    return AcceleratorSupport.registerSaveStatePreHook(this, hook);
  }

  /**
   * hook(models, weights, directory) runs before saveState writes, as Accelerate's: the prepared
   * models and their state dicts (getStateDict's; closed after the hook; editing them does not
   * change what saveState writes).
   */
  public RemovableHandle registerSaveStatePreHook(SaveStateHook hook) {
    return AcceleratorSupport.registerSaveStatePreHook(this, directory -> {
      java.util.List<java.util.Map<String, Tensor>> weights = new java.util.ArrayList<>();
      try {
        for (Model model : preparedModels) weights.add(getStateDict(model));
        hook.run(java.util.Collections.unmodifiableList(new java.util.ArrayList<>(preparedModels)), weights, directory);
      } finally {
        for (java.util.Map<String, Tensor> dict : weights) dict.values().forEach(Tensor::close);
      }
    });
  }

  /** hook(directory) runs before loadState reads. */
  public RemovableHandle registerLoadStatePreHook(DirectoryHook hook) {
    return AcceleratorSupport.registerLoadStatePreHook(this, hook);
  }

  /** hook(models, directory) runs before loadState reads, as Accelerate's: the prepared models. */
  public RemovableHandle registerLoadStatePreHook(LoadStateHook hook) {
    return AcceleratorSupport.registerLoadStatePreHook(
        this, directory -> hook.run(java.util.Collections.unmodifiableList(new java.util.ArrayList<>(preparedModels)), directory));
  }

  private final java.util.List<Model> preparedModels = new java.util.ArrayList<>();

  /** Prepares one model (prepare(Object...) does it for every model it is given). Collective. */
  public void prepareModel(Model model) {
    nativePrepareModel(model);
    preparedModels.add(model);
  }

  /** Accelerate's free_memory: forgets every prepared model, optimizer and loader. */
  public void freeMemory() {
    nativeFreeMemory();
    preparedModels.clear();
  }

  /** Accelerate's alias of freeMemory. */
  public void clear() {
    freeMemory();
  }

  /** A custom tracker, started by initTrackers on the main process; kept until the accelerator is freed. */
  public void addTracker(Tracker tracker) {
    AcceleratorSupport.addTracker(this, tracker);
    customTrackers.putIfAbsent(tracker.name(), tracker);
  }

  private final java.util.Map<String, Tracker> customTrackers = new java.util.HashMap<>();
  private final java.util.Map<String, BuiltinTracker> builtinTrackers = new java.util.HashMap<>();

  /**
   * Accelerate's get_tracker(name): the custom tracker added under name, or for a running
   * built-in tracker ("tensorboard", "jsonl", ...) a BuiltinTracker whose log writes to it
   * alone (the same object each time). Where no tracker runs in this process (other processes,
   * before initTrackers) a Tracker that does nothing, as Accelerate's blank tracker; with
   * trackers running, IllegalArgumentException for a name none of them has.
   */
  public Tracker getTracker(String name) {
    Tracker custom = customTrackers.get(name);
    if (custom != null) return custom;
    if (BuiltinTracker.NAMES.contains(name) && hasTracker(name)) {
      return builtinTrackers.computeIfAbsent(name, n -> new BuiltinTracker(this, n));
    }
    boolean running = BuiltinTracker.NAMES.stream().anyMatch(this::hasTracker)
        || customTrackers.keySet().stream().anyMatch(this::hasTracker);
    if (running) throw new IllegalArgumentException(name + " is not an available tracker stored inside the Accelerator");
    return new Tracker() {};
  }

  /**
   * Accelerate's get_tracker(tracker).log(values, step): to the running tracker called tracker
   * alone; nothing where no tracker runs in this process. step &lt; 0: no step.
   */
  public void logTo(String tracker, Map<String, ? extends Number> values, long step) {
    AcceleratorSupport.log(this, tracker, values, step);
  }

  /**
   * Accelerate's init_trackers(project_name, config): starts the trackers on the main process
   * with config's values (String, Number, Boolean, null, nested Maps and Lists) as their
   * hyperparameters. An unsupported value throws AccelException naming its type.
   */
  public void initTrackers(String projectName, Map<String, ?> config) {
    initTrackers(projectName, Json.write(config));
  }

  /**
   * Accelerate's init_trackers(project_name, config, init_kwargs): initKwargs maps a built-in
   * tracker's name to its options, e.g. {"wandb": {"name": "run-1", "tags": ["baseline"]}}
   * (docs/tracking.md). An option the tracker does not take throws AccelException naming it.
   */
  public void initTrackers(String projectName, Map<String, ?> config, Map<String, ? extends Map<String, ?>> initKwargs) {
    initTrackers(projectName, config == null ? "" : Json.write(config), initKwargs == null ? "" : Json.write(initKwargs));
  }

  /** Logs values to every tracker (main process); step &lt; 0: no step. */
  public void log(Map<String, ? extends Number> values, long step) {
    AcceleratorSupport.log(this, null, values, step);
  }

  public void log(Map<String, ? extends Number> values) {
    log(values, -1);
  }

  /**
   * Accelerate's accelerator.save for named tensors: one safetensors file, written by the
   * main process. Borrows the tensors.
   */
  public void save(Map<String, Tensor> tensors, String path) {
    AcceleratorSupport.save(this, tensors, path);
  }

  /** Every process's string, in rank order. Collective. */
  public List<String> gatherObjects(String data) {
    return AcceleratorSupport.gatherObjects(this, data);
  }

  /*
   * Accelerate's operations on nested structures: data is a Tensor or Lists and Maps of them,
   * nested; the result has the same structure (Lists as ArrayList, Maps as LinkedHashMap) with
   * new tensors the caller closes. Every process passes the same structure. Collective.
   */

  /** gather on every tensor of data. */
  public Object gatherNested(Object data) {
    return Nested.apply(data, "gatherNested", this::gatherList);
  }

  /** gatherForMetrics on every tensor of data. */
  public Object gatherForMetricsNested(Object data) {
    return Nested.apply(data, "gatherForMetricsNested", this::gatherForMetricsList);
  }

  /** scale * the sum over processes (REDUCE_SUM, REDUCE_NONE), divided by their count for REDUCE_MEAN. */
  public Object reduceNested(Object data, ReduceOp op, double scale) {
    return Nested.apply(data, "reduceNested", list -> reduceList(list, op, scale));
  }

  /** fromProcess's tensors on every process. */
  public Object broadcastNested(Object data, int fromProcess) {
    return Nested.apply(data, "broadcastNested", list -> broadcastList(list, fromProcess));
  }

  /** Pads every tensor along dim (tensors without dim come back unchanged). */
  public Object padAcrossProcessesNested(Object data, long dim, double padValue, boolean padFirst) {
    return Nested.apply(data, "padAcrossProcessesNested", list -> padAcrossProcessesList(list, dim, padValue, padFirst));
  }

  /**
   * This process's share of items (Accelerate's split_between_processes): the first
   * size % numProcesses processes take one more, surplus processes get an empty list, and
   * applyPadding repeats the last item so that every process gets as many. Not collective.
   */
  public <T> List<T> splitBetweenProcesses(List<T> items, boolean applyPadding) {
    return Nested.split(items, Nested.range(this, items.size(), applyPadding));
  }

  /** The same share of every list of inputs (Accelerate's dict input); the lists must have equal sizes. */
  public <K, T> Map<K, List<T>> splitBetweenProcesses(Map<K, ? extends List<T>> inputs, boolean applyPadding) {
    return AcceleratorSupport.splitBetweenProcesses(this, inputs, applyPadding);
  }

  /**
   * Accelerate's gather_for_metrics with use_gather_object: every process's items concatenated in
   * rank order, without the ones repeated to complete the last round of a prepared loader.
   * Items travel with Java serialization: the peer processes are trusted. Collective.
   */
  public <T extends java.io.Serializable> List<T> gatherForMetricsObjects(List<T> items) {
    return AcceleratorSupport.gatherForMetricsObjects(this, items);
  }

  /**
   * Accelerate's broadcast_object_list: replaces list's items with fromProcess's, in place, and
   * returns it (Java serialization; the peers are trusted). Collective.
   */
  public <T extends java.io.Serializable> List<T> broadcastObjectList(List<T> list, int fromProcess) {
    return AcceleratorSupport.broadcastObjectList(this, list, fromProcess);
  }
%}
