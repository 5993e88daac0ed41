/* The Java code of Model, TensorMap, Optimizer and Scheduler.
 * Part of accel_java.i, which includes it before accel_core.i. */

%typemap(javacode) AccelModel %{
  @Override
  public void close() {
    delete();
  }

  /** A TorchScript model whose outputs (a tuple or a single tensor) get these names, in order. */
  public static Model fromTorchscriptOutputs(String path, java.util.List<String> outputNames) {
    return ModelSupport.fromTorchscriptOutputs(path, outputNames);
  }

  /**
   * A TorchScript model with its parameters on the meta device, never read from the file
   * (Accelerate's init_empty_weights): its code, constants and buffers are loaded. Fill it with
   * materialize or loadCheckpointAndDispatch; forward fails until then.
   */
  public static Model fromTorchscriptEmpty(String path) {
    return ModelSupport.fromTorchscriptEmpty(path, java.util.List.of());
  }

  /** fromTorchscriptEmpty, naming the outputs as fromTorchscriptOutputs does. */
  public static Model fromTorchscriptEmpty(String path, java.util.List<String> outputNames) {
    return ModelSupport.fromTorchscriptEmpty(path, outputNames);
  }

  /** Evaluation mode (train(false)). */
  public void eval() {
    train(false);
  }

  // ---- big models (docs/big-models.md): maps of module name to "cpu", "disk" or "cuda:N" ----

  /**
   * Bytes of every module's parameters and buffers ("" is the whole model), as if cast to dtype
   * (null: each tensor's own). Accelerate's compute_module_sizes.
   */
  public java.util.LinkedHashMap<String, Long> moduleSizes(String dtype) {
    return ModelSupport.moduleSizes(this, dtype);
  }

  /**
   * transformers' hf_device_map: the device map dispatchModel or loadCheckpointAndDispatch last
   * placed this model with (an "auto" map as computed), module name to device in the map's order;
   * empty when neither did. Accelerate's verify_device_map is its size above one.
   */
  public java.util.LinkedHashMap<String, String> hfDeviceMap() {
    return ModelSupport.deviceMapOf(hfDeviceMapJson());
  }

  /**
   * Accelerate 0.22's infer_auto_device_map: modules placed over the GPUs in order, then "cpu",
   * then "disk", within budgets such as {"cpu": "200MB"} (null: Accel.getMaxMemory()); classes in
   * noSplit are never split.
   * A budget below the largest unsplittable module throws AccelException naming it.
   */
  public java.util.LinkedHashMap<String, String> inferAutoDeviceMap(java.util.Map<String, String> maxMemory,
                                                                     java.util.List<String> noSplit, String dtype) {
    return ModelSupport.inferAutoDeviceMap(this, maxMemory, noSplit, dtype);
  }

  /**
   * Accelerate's get_balanced_memory: maxMemory (such as {"0": "1GB", "1": "1GB", "cpu": "8GB"};
   * null: Accel.getMaxMemory(), of which a lone GPU then keeps 10% free) with every GPU's budget but
   * the last lowered to an even share of the model plus a margin, so that inferAutoDeviceMap spreads
   * the model over the GPUs; lowZero leaves GPU 0 only what the others cannot hold. Budgets in bytes,
   * GPUs as "cuda:N". Without a GPU they come back unchanged.
   */
  public java.util.LinkedHashMap<String, Long> balancedMemory(java.util.Map<String, String> maxMemory,
                                                               java.util.List<String> noSplit, String dtype,
                                                               boolean lowZero) {
    return ModelSupport.balancedMemory(this, maxMemory, noSplit, dtype, lowZero);
  }

  /** Throws AccelException naming the first key that names no module or device, or the first tensor left out. */
  public void checkDeviceMap(java.util.Map<String, String> deviceMap) {
    verifyDeviceMapJson(Json.write(deviceMap));
  }

  /**
   * Accelerate's dispatch_model: this loaded model's tensors go where deviceMap puts them ("cpu",
   * "cuda:N"; "disk" writes them to offloadDir/model.safetensors and reads them back just before
   * their node runs, so offloadDir may be null only without "disk"). Checked before anything moves.
   */
  public void dispatchModel(java.util.Map<String, String> deviceMap, String offloadDir) {
    dispatchModelJson(Json.write(deviceMap), offloadDir == null ? "" : offloadDir);
  }

  /**
   * Loads checkpoint (a .safetensors file, a sharded index or a directory) memory-mapped, each
   * module where deviceMap puts it ("disk": read from offloadFolder or the checkpoint just
   * before its node runs; null map: everything on the CPU). Checked before anything is loaded.
   */
  public void loadCheckpointAndDispatch(String checkpoint, java.util.Map<String, String> deviceMap,
                                        String offloadFolder, String dtype) {
    ModelSupport.loadCheckpointAndDispatch(this, checkpoint, deviceMap, offloadFolder, dtype);
  }

  /**
   * Accelerate's device_map strings "auto", "balanced", "balanced_low_0" and "sequential":
   * loadCheckpointAndDispatch with the map inferAutoDeviceMap makes from every GPU's free memory
   * and the RAM the system has available, balanced over the GPUs (balancedMemory) but for
   * "sequential". Another strategy is an AccelException naming it.
   */
  public void loadCheckpointAndDispatch(String checkpoint, String strategy, String offloadFolder, String dtype) {
    ModelSupport.loadCheckpointAndDispatch(this, checkpoint, strategy, offloadFolder, dtype);
  }

  /**
   * Named inputs (a Hugging Face model's input_ids, attention_mask, labels) to named outputs
   * in the model's order (loss, logits). A TorchScript model binds each input to the forward
   * argument of that name; outputs are named by the dict's keys, the NamedTuple's fields, the
   * names given to fromTorchscriptOutputs, "0", "1", ... or "output". A missing, unknown or
   * mistyped input is an AccelException naming it. The caller closes the outputs.
   */
  public java.util.LinkedHashMap<String, Tensor> forward(java.util.Map<String, Tensor> inputs) {
    return ModelSupport.forward(this, inputs);
  }

  /**
   * The parameters by PyTorch name, each tensor once (tied weights under their first name).
   * The tensors are the parameters themselves, not copies; the caller closes the handles.
   */
  public java.util.LinkedHashMap<String, Tensor> parameters() {
    return TensorMaps.drain(namedParameters());
  }

  /** The buffers by name, as parameters() lists the parameters. */
  public java.util.LinkedHashMap<String, Tensor> buffers() {
    return TensorMaps.drain(namedBuffers());
  }

  /**
   * PyTorch's load_state_dict: copies each tensor into the parameter or buffer of that name.
   * strict: missing or unexpected names throw an AccelException listing them. Everything is
   * checked before anything is copied. Returns the names a non-strict load skipped. Collective
   * under FULL_SHARD (every process calls it).
   */
  public IncompatibleKeys loadStateDict(java.util.Map<String, Tensor> tensors, boolean strict) {
    return ModelSupport.loadStateDict(this, tensors, strict);
  }
%}

%typemap(javainterfaces) AccelTensorMap "AutoCloseable"
%typemap(javacode) AccelTensorMap %{
  @Override
  public void close() {
    delete();
  }

  /** A map holding the tensors of entries (references, not copies). */
  public static TensorMap of(java.util.Map<String, Tensor> entries) {
    return TensorMaps.of(entries);
  }
%}

%typemap(javacode) AccelOptimizer %{
  @Override
  public void close() {
    delete();
  }

  /** AdamW with learning rate lr and PyTorch's other defaults. */
  public static Optimizer adamW(Model model, double lr) {
    return OptimizerSupport.adamW(model, lr);
  }

  /** SGD with learning rate lr and momentum. */
  public static Optimizer sgd(Model model, double lr, double momentum) {
    return OptimizerSupport.sgd(model, lr, momentum);
  }
%}

%typemap(javacode) AccelScheduler %{
  @Override
  public void close() {
    delete();
  }

  /** A scheduler with milestones (multi-step); the options carry the rest. */
  public static Scheduler create(Optimizer optimizer, SchedulerOptions options, long... milestones) {
    return OptimizerSupport.scheduler(optimizer, options, milestones);
  }
%}
