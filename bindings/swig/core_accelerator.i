/* The accelerator, partial states, progress bars and profiles: accel.h,
 * accel_checkpoint.h, accel_tracking.h and accel_partial_state.h.
 * Part of accel_core.i, which declares the handles and includes this file. */

%newobject AccelAccelerator::gather;
%newobject AccelAccelerator::send_to_device;
%newobject AccelAccelerator::send_map_to_device;
%newobject AccelAccelerator::gather_for_metrics;
%newobject AccelAccelerator::reduce;
%newobject AccelAccelerator::broadcast;
%newobject AccelAccelerator::pad_across_processes;
%newobject AccelAccelerator::split_between_processes;
%newobject AccelAccelerator::state_dict_tensors;
%newobject AccelAccelerator::gather_list;
%newobject AccelAccelerator::gather_for_metrics_list;
%newobject AccelAccelerator::reduce_list;
%newobject AccelAccelerator::broadcast_list;
%newobject AccelAccelerator::pad_across_processes_list;
%newobject AccelAccelerator::split_between_processes_list;
%extend AccelAccelerator {
  AccelAccelerator(const accel_accelerator_options* options = 0) {
    accel_accelerator* out = 0;
    accel_check(accel_accelerator_create(options, &out));
    return out;
  }
  ~AccelAccelerator() { accel_bindings_free_accelerator($self); }

  int process_index() const { int v = 0; accel_check(accel_accelerator_process_index($self, &v)); return v; }
  int local_process_index() const { int v = 0; accel_check(accel_accelerator_local_process_index($self, &v)); return v; }
  int num_processes() const { int v = 0; accel_check(accel_accelerator_num_processes($self, &v)); return v; }
  bool is_main_process() const { int v = 0; accel_check(accel_accelerator_is_main_process($self, &v)); return v != 0; }
  bool is_local_main_process() const {
    int v = 0;
    accel_check(accel_accelerator_is_local_main_process($self, &v));
    return v != 0;
  }
  accel_distributed_type distributed_type() const {
    accel_distributed_type v;
    accel_check(accel_accelerator_distributed_type($self, &v));
    return v;
  }
  accel_mixed_precision mixed_precision() const {
    accel_mixed_precision v;
    accel_check(accel_accelerator_mixed_precision($self, &v));
    return v;
  }
  std::string device() const { const char* v = 0; accel_check(accel_accelerator_device($self, &v)); return v; }
  int64_t timeout_ms() const { int64_t v = 0; accel_check(accel_accelerator_timeout_ms($self, &v)); return v; }
  accel_sharding_strategy sharding_strategy() const {
    accel_sharding_strategy v;
    accel_check(accel_accelerator_sharding_strategy($self, &v));
    return v;
  }
  bool cpu_offload() const { int v = 0; accel_check(accel_accelerator_cpu_offload($self, &v)); return v != 0; }
  /* [dp_replicate_size, dp_shard_size, tp_size, cp_size] of the mesh in use; each
     language's layer turns it into its ParallelismConfig. */
  std::vector<int64_t> parallelism_sizes() const {
    int64_t replicate = 0, shard = 0, tp = 0, cp = 0;
    accel_check(accel_accelerator_parallelism_config($self, &replicate, &shard, &tp, &cp));
    return std::vector<int64_t>{replicate, shard, tp, cp};
  }
  std::vector<int64_t> parallelism_ranks() const {
    int64_t replicate = 0, shard = 0, tp = 0, cp = 0;
    accel_check(accel_accelerator_parallelism_ranks($self, &replicate, &shard, &tp, &cp));
    return std::vector<int64_t>{replicate, shard, tp, cp};
  }

  void wait_for_everyone() { accel_check(accel_accelerator_wait_for_everyone($self)); }
  void print(const std::string& message) const { accel_check(accel_accelerator_print($self, message.c_str())); }
  void set_seed(uint64_t seed) { accel_check(accel_accelerator_set_seed($self, seed)); }
  /* Accelerate's set_seed(seed, device_specific, deterministic); the language
     layers also seed their own generators (no defaults: SWIG-Go would make
     them variadic). */
  void set_seed_ext(uint64_t seed, bool device_specific, bool deterministic) {
    accel_check(accel_accelerator_set_seed_ext($self, seed, device_specific, deterministic));
  }

  AccelTensor* gather(const AccelTensor* tensor) {
    accel_tensor* out = 0;
    accel_check(accel_accelerator_gather($self, tensor, &out));
    return out;
  }
  AccelTensor* gather_for_metrics(const AccelTensor* tensor) {
    accel_tensor* out = 0;
    accel_check(accel_accelerator_gather_for_metrics($self, tensor, &out));
    return out;
  }
  AccelTensor* reduce(const AccelTensor* tensor, accel_reduce_op op = ACCEL_REDUCE_SUM) {
    accel_tensor* out = 0;
    accel_check(accel_accelerator_reduce($self, tensor, op, &out));
    return out;
  }
  AccelTensor* broadcast(const AccelTensor* tensor, int from_process = 0) {
    accel_tensor* out = 0;
    accel_check(accel_accelerator_broadcast($self, tensor, from_process, &out));
    return out;
  }
  AccelTensor* pad_across_processes(const AccelTensor* tensor, int64_t dim = 0, double pad_value = 0.0,
                                    bool pad_first = false) {
    accel_tensor* out = 0;
    accel_check(accel_accelerator_pad_across_processes($self, tensor, dim, pad_value, pad_first, &out));
    return out;
  }
  AccelTensor* split_between_processes(const AccelTensor* tensor, bool apply_padding = false) const {
    accel_tensor* out = 0;
    accel_check(accel_accelerator_split_between_processes($self, tensor, apply_padding, &out));
    return out;
  }
  /* List collectives (accel.h): one result per tensor, in a Batch. */
  AccelBatch* gather_list(const AccelTensorList& tensors) {
    AccelBatch* out = accel_new_list_result(tensors.tensors.size());
    return accel_list_result(out, accel_accelerator_gather_tensors($self, tensors.tensors.data(), tensors.tensors.size(),
                                                                   out->tensors.data()));
  }
  AccelBatch* gather_for_metrics_list(const AccelTensorList& tensors) {
    AccelBatch* out = accel_new_list_result(tensors.tensors.size());
    return accel_list_result(out, accel_accelerator_gather_for_metrics_tensors(
                                      $self, tensors.tensors.data(), tensors.tensors.size(), out->tensors.data()));
  }
  AccelBatch* reduce_list(const AccelTensorList& tensors, accel_reduce_op op = ACCEL_REDUCE_SUM, double scale = 1.0) {
    AccelBatch* out = accel_new_list_result(tensors.tensors.size());
    return accel_list_result(out, accel_accelerator_reduce_tensors($self, tensors.tensors.data(), tensors.tensors.size(),
                                                                   op, scale, out->tensors.data()));
  }
  AccelBatch* broadcast_list(const AccelTensorList& tensors, int from_process = 0) {
    AccelBatch* out = accel_new_list_result(tensors.tensors.size());
    return accel_list_result(out, accel_accelerator_broadcast_tensors($self, tensors.tensors.data(),
                                                                      tensors.tensors.size(), from_process,
                                                                      out->tensors.data()));
  }
  AccelBatch* pad_across_processes_list(const AccelTensorList& tensors, int64_t dim = 0, double pad_value = 0.0,
                                        bool pad_first = false) {
    AccelBatch* out = accel_new_list_result(tensors.tensors.size());
    return accel_list_result(out, accel_accelerator_pad_across_processes_tensors(
                                      $self, tensors.tensors.data(), tensors.tensors.size(), dim, pad_value,
                                      pad_first, out->tensors.data()));
  }
  AccelBatch* split_between_processes_list(const AccelTensorList& tensors, bool apply_padding = false) const {
    AccelBatch* out = accel_new_list_result(tensors.tensors.size());
    return accel_list_result(out, accel_accelerator_split_between_processes_tensors(
                                      $self, tensors.tensors.data(), tensors.tensors.size(), apply_padding,
                                      out->tensors.data()));
  }
  /* {start, end, padded_length}: the items of n this process takes (accel_accelerator_split_range). */
  std::vector<int64_t> split_range(int64_t n, bool apply_padding = false) const {
    int64_t start = 0, end = 0, padded = 0;
    accel_check(accel_accelerator_split_range($self, n, apply_padding, &start, &end, &padded));
    return std::vector<int64_t>{start, end, padded};
  }
  int64_t metrics_length(int64_t gathered) const {
    int64_t v = 0;
    accel_check(accel_accelerator_metrics_length($self, gathered, &v));
    return v;
  }
  bool debug_mode() const { int v = 0; accel_check(accel_accelerator_debug_mode($self, &v)); return v != 0; }
  /* Process from_process's string on every process (the bytes travel unchanged). */
  std::string broadcast_object(const std::string& data, int from_process = 0) {
    accel_tensor* bytes = 0;
    accel_check(accel_accelerator_broadcast_object($self, data.data(), data.size(), from_process, &bytes));
    int64_t total = 0;
    accel_tensor_numel(bytes, &total);
    std::string all(static_cast<size_t>(total), '\0');
    accel_status s = total > 0 ? accel_tensor_copy_to(bytes, &all[0], all.size()) : ACCEL_OK;
    accel_tensor_free(bytes);
    accel_check(s);
    return all;
  }
  /* Accelerate's accelerator.save for named tensors: one safetensors file,
     written by the main process. Borrows the tensors. */
  void save_tensors(const AccelNamedTensors& tensors, const std::string& path) {
    std::vector<const char*> names;
    for (const std::string& name : tensors.names) names.push_back(name.c_str());
    accel_check(accel_accelerator_save_tensors($self, names.data(), tensors.tensors.data(), names.size(), path.c_str()));
  }
  /* Every process's string, in rank order (the bytes travel unchanged). */
  std::vector<std::string> gather_object(const std::string& data) {
    accel_tensor* bytes = 0;
    accel_tensor* lengths = 0;
    accel_check(accel_accelerator_gather_object($self, data.data(), data.size(), &bytes, &lengths));
    int64_t total = 0, count = 0;
    accel_tensor_numel(bytes, &total);
    accel_tensor_numel(lengths, &count);
    std::string all(static_cast<size_t>(total), '\0');
    std::vector<int64_t> sizes(static_cast<size_t>(count));
    accel_status s1 = accel_tensor_copy_to(bytes, &all[0], all.size());
    accel_status s2 = accel_tensor_copy_to(lengths, sizes.data(), sizes.size() * sizeof(int64_t));
    accel_tensor_free(bytes);
    accel_tensor_free(lengths);
    accel_check(s1);
    accel_check(s2);
    std::vector<std::string> result;
    size_t offset = 0;
    for (int64_t n : sizes) {
      result.push_back(all.substr(offset, static_cast<size_t>(n)));
      offset += static_cast<size_t>(n);
    }
    return result;
  }
  void set_trigger() { accel_check(accel_accelerator_set_trigger($self)); }
  bool check_trigger() { int v = 0; accel_check(accel_accelerator_check_trigger($self, &v)); return v != 0; }
  void main_process_first_begin() { accel_check(accel_accelerator_main_process_first_begin($self)); }
  void main_process_first_end() { accel_check(accel_accelerator_main_process_first_end($self)); }
  void local_main_process_first_begin() { accel_check(accel_accelerator_local_main_process_first_begin($self)); }
  void local_main_process_first_end() { accel_check(accel_accelerator_local_main_process_first_end($self)); }
  /* Forgets every prepared object, resets accumulation, empties the CUDA cache. */
  void free_memory() { accel_check(accel_accelerator_free_memory($self)); }
  void clear() { accel_check(accel_accelerator_free_memory($self)); }  /* Accelerate's alias */

  void prepare_model(AccelModel* model) { accel_check(accel_accelerator_prepare_model($self, model)); }
  void prepare_optimizer(AccelOptimizer* optimizer) { accel_check(accel_accelerator_prepare_optimizer($self, optimizer)); }
  void prepare_dataloader(AccelDataLoader* loader) { accel_check(accel_accelerator_prepare_dataloader($self, loader)); }
  void prepare_scheduler(AccelScheduler* scheduler) { accel_check(accel_accelerator_prepare_scheduler($self, scheduler)); }
  void backward(const AccelTensor* loss) { accel_check(accel_accelerator_backward($self, loss)); }

  void accumulate_begin(AccelModel* model) { accel_check(accel_accelerator_accumulate_begin($self, model)); }
  void accumulate_end(AccelModel* model) { accel_check(accel_accelerator_accumulate_end($self, model)); }
  bool end_of_dataloader() const { int v = 0; accel_check(accel_accelerator_end_of_dataloader($self, &v)); return v != 0; }
  bool in_dataloader() const { int v = 0; accel_check(accel_accelerator_in_dataloader($self, &v)); return v != 0; }
  int64_t remainder() const { int64_t v = 0; accel_check(accel_accelerator_remainder($self, &v)); return v; }
  bool sync_gradients() const { int v = 0; accel_check(accel_accelerator_sync_gradients($self, &v)); return v != 0; }
  int64_t gradient_accumulation_steps() const {
    int64_t v = 0;
    accel_check(accel_accelerator_gradient_accumulation_steps($self, &v));
    return v;
  }
  /* Accelerate's accelerator.step: micro-steps counted into the accumulation window. */
  int64_t accumulation_step() const {
    int64_t v = 0;
    accel_check(accel_accelerator_accumulation_step($self, &v));
    return v;
  }
  /* Accelerate's setters: accelerator.sync_gradients = ..., gradient_accumulation_steps = ..., even_batches = ... */
  void set_sync_gradients(bool sync) { accel_check(accel_accelerator_set_sync_gradients($self, sync)); }
  void set_gradient_accumulation_steps(int64_t steps) {
    accel_check(accel_accelerator_set_gradient_accumulation_steps($self, steps));
  }
  void set_even_batches(bool even) { accel_check(accel_accelerator_set_even_batches($self, even)); }
  /* The DataLoaderConfiguration in use; dispatch_batches -1 when unset, data_seed -1 when none. */
  bool split_batches() const { int v = 0; accel_check(accel_accelerator_split_batches($self, &v)); return v != 0; }
  bool even_batches() const { int v = 0; accel_check(accel_accelerator_even_batches($self, &v)); return v != 0; }
  int dispatch_batches() const { int v = 0; accel_check(accel_accelerator_dispatch_batches($self, &v)); return v; }
  bool use_seedable_sampler() const {
    int v = 0;
    accel_check(accel_accelerator_use_seedable_sampler($self, &v));
    return v != 0;
  }
  int64_t data_seed() const { int64_t v = 0; accel_check(accel_accelerator_data_seed($self, &v)); return v; }
  bool non_blocking() const { int v = 0; accel_check(accel_accelerator_non_blocking($self, &v)); return v != 0; }
  bool use_stateful_dataloader() const {
    int v = 0;
    accel_check(accel_accelerator_use_stateful_dataloader($self, &v));
    return v != 0;
  }
  /* Comma-separated generator names: "torch", "cuda", "generator". Collective. */
  void synchronize_rng_states(const std::string& rng_types) {
    accel_check(accel_accelerator_synchronize_rng_states($self, rng_types.c_str()));
  }
  void no_sync_begin(AccelModel* model) { accel_check(accel_accelerator_no_sync_begin($self, model)); }
  void no_sync_end(AccelModel* model) { accel_check(accel_accelerator_no_sync_end($self, model)); }
  void average_parameters(AccelModel* model) { accel_check(accel_accelerator_average_parameters($self, model)); }
  void trigger_sync_in_backward(AccelModel* model) { accel_check(accel_accelerator_trigger_sync_in_backward($self, model)); }
  /* Returns the total norm before clipping. */
  /* Bytes held for the model's parameters, gradients and the optimizer's state (optimizer may
     be null): {parameters, gradients, optimizer_state}. */
  std::vector<int64_t> held_bytes(const AccelModel* model, const AccelOptimizer* optimizer = 0) const {
    int64_t parameters = 0, gradients = 0, state = 0;
    accel_check(accel_accelerator_held_bytes($self, model, optimizer, &parameters, &gradients, &state));
    return {parameters, gradients, state};
  }
  double clip_grad_norm(AccelModel* model, double max_norm, double norm_type = 2.0) {
    double total = 0;
    accel_check(accel_accelerator_clip_grad_norm($self, model, max_norm, norm_type, &total));
    return total;
  }
  void clip_grad_value(AccelModel* model, double clip_value) {
    accel_check(accel_accelerator_clip_grad_value($self, model, clip_value));
  }
  void unscale_gradients(AccelOptimizer* optimizer) { accel_check(accel_accelerator_unscale_gradients($self, optimizer)); }
  double loss_scale() const { double v = 0; accel_check(accel_accelerator_loss_scale($self, &v)); return v; }
  void join_uneven_inputs_begin() { accel_check(accel_accelerator_join_uneven_inputs_begin($self)); }
  void join_uneven_inputs_end() { accel_check(accel_accelerator_join_uneven_inputs_end($self)); }
  void autocast_begin(bool enabled) { accel_check(accel_accelerator_autocast_begin($self, enabled ? 1 : 0)); }
  /* Follows the options' autocast_enabled (AutocastKwargs given at creation). */
  void autocast_begin_default() { accel_check(accel_accelerator_autocast_begin($self, -1)); }
  void autocast_end() { accel_check(accel_accelerator_autocast_end($self)); }
  void no_grad_begin() { accel_check(accel_accelerator_no_grad_begin($self)); }
  void no_grad_end() { accel_check(accel_accelerator_no_grad_end($self)); }
  AccelTensor* send_to_device(const AccelTensor* tensor) const {
    accel_tensor* out = 0;
    accel_check(accel_accelerator_send_to_device($self, tensor, &out));
    return out;
  }
  AccelTensorMap* send_map_to_device(const AccelTensorMap* tensors) const {
    accel_tensor_map* out = 0;
    accel_check(accel_accelerator_send_map_to_device($self, tensors, &out));
    return out;
  }

  /* ---- checkpoints ---- */
  /* Returns the directory written (dir, or the automatic checkpoint_{i}). */
  /* safe_serialization=false: pytorch_model.bin instead of model.safetensors (Accelerate 0.22 reads it). */
  std::string save_state(const std::string& dir = "", bool safe_serialization = true) {
    accel_check(accel_accelerator_save_state_ext($self, dir.c_str(), safe_serialization));
    const char* written = "";
    accel_check(accel_accelerator_last_checkpoint_dir($self, &written));
    return written;
  }
  void load_state(const std::string& dir = "") { accel_check(accel_accelerator_load_state($self, dir.c_str())); }
  int64_t save_iteration() const { int64_t v = 0; accel_check(accel_accelerator_save_iteration($self, &v)); return v; }
  /* Accelerate's project_configuration.iteration = n. */
  void set_save_iteration(int64_t iteration) { accel_check(accel_accelerator_set_save_iteration($self, iteration)); }
  void save_model(const AccelModel* model, const std::string& dir, const std::string& max_shard_size = "10GB",
                  bool safe_serialization = true) {
    accel_check(accel_accelerator_save_model($self, model, dir.c_str(), max_shard_size.c_str(), safe_serialization));
  }
  /* Accelerate's get_state_dict, in two calls: the names, then CPU copies of
     the tensors in the same order (a Batch whose tensors are taken one by one). */
  std::vector<std::string> state_dict_names(const AccelModel* model) {
    size_t count = 0;
    accel_check(accel_accelerator_get_state_dict($self, model, 0, 0, 0, &count));
    std::vector<const char*> names(count);
    accel_check(accel_accelerator_get_state_dict($self, model, names.data(), 0, count, &count));
    return std::vector<std::string>(names.begin(), names.end());
  }
  AccelBatch* state_dict_tensors(const AccelModel* model) {
    size_t count = 0;
    accel_check(accel_accelerator_get_state_dict($self, model, 0, 0, 0, &count));
    AccelBatch* batch = new AccelBatch;
    batch->tensors.assign(count, 0);
    accel_status status = accel_accelerator_get_state_dict($self, model, 0, batch->tensors.data(), count, &count);
    if (status != ACCEL_OK) {
      delete batch;
      accel_check(status);
    }
    return batch;
  }
  /* Returns {missing, unexpected}: the model tensors the file lacks and the file tensors the model lacks. */
  /* strict defaults to false, as Accelerate's load_checkpoint_in_model (which loads with strict=False). */
  std::vector<int64_t> load_checkpoint_in_model(AccelModel* model, const std::string& path, bool strict = false) {
    int64_t missing = 0, unexpected = 0;
    accel_check(accel_accelerator_load_checkpoint_in_model($self, model, path.c_str(), strict, &missing, &unexpected));
    return std::vector<int64_t>{missing, unexpected};
  }
  /* The accelerator owns object from now on (the language adapters hand it over). */
  void register_for_checkpointing(CheckpointObject* object) {
    accel_checkpoint_callbacks callbacks;
    accel_checkpoint_callbacks_init(&callbacks);
    callbacks.save = accel_bridge::checkpoint_save;
    callbacks.load = accel_bridge::checkpoint_load;
    callbacks.release = accel_bridge::checkpoint_release;
    accel_check(accel_accelerator_register_for_checkpointing($self, &callbacks, object));
  }
  /* Both take ownership of hook; the returned id removes it. */
  int64_t register_save_state_pre_hook(StateHook* hook) {
    int64_t id = 0;
    accel_check(accel_accelerator_register_save_state_pre_hook($self, accel_bridge::hook_run, hook,
                                                               accel_bridge::hook_release, &id));
    return id;
  }
  int64_t register_load_state_pre_hook(StateHook* hook) {
    int64_t id = 0;
    accel_check(accel_accelerator_register_load_state_pre_hook($self, accel_bridge::hook_run, hook,
                                                               accel_bridge::hook_release, &id));
    return id;
  }
  void remove_hook(int64_t id) { accel_check(accel_accelerator_remove_hook($self, id)); }

  /* ---- tracking ---- */
  /* The accelerator owns tracker from now on (the language adapters hand it over). */
  void add_tracker(Tracker* tracker, const std::string& name) {
    accel_tracker_callbacks callbacks;
    accel_tracker_callbacks_init(&callbacks);
    callbacks.name = name.c_str();
    callbacks.user = tracker;
    callbacks.init = accel_bridge::tracker_init;
    callbacks.log = accel_bridge::tracker_log;
    callbacks.finish = accel_bridge::tracker_finish;
    accel_check(accel_accelerator_add_tracker($self, &callbacks));
    std::lock_guard<std::mutex> lock(accel_tracker_mutex);
    accel_owned_trackers[$self].push_back(tracker);
  }
  void init_trackers(const std::string& project_name, const std::string& config_json = "",
                     const std::string& init_kwargs_json = "") {
    accel_check(accel_accelerator_init_trackers_with($self, project_name.c_str(),
                                                     config_json.empty() ? 0 : config_json.c_str(),
                                                     init_kwargs_json.c_str()));
  }
  void log(const std::vector<std::string>& names, const std::vector<double>& values, int64_t step = -1) {
    const std::vector<const char*> raw = scalar_names(names, values);
    accel_check(accel_accelerator_log($self, raw.data(), values.data(), values.size(), step));
  }
  void log_text(const std::string& tag, const std::string& text, int64_t step = -1) {
    accel_check(accel_accelerator_log_text($self, tag.c_str(), text.c_str(), step));
  }
  /* Accelerate's get_tracker(tracker).log: to one running tracker. */
  void log_to(const std::string& tracker, const std::vector<std::string>& names, const std::vector<double>& values,
              int64_t step = -1) {
    const std::vector<const char*> raw = scalar_names(names, values);
    accel_check(accel_accelerator_log_to($self, tracker.c_str(), raw.data(), values.data(), values.size(), step));
  }
  void log_text_to(const std::string& tracker, const std::string& tag, const std::string& text, int64_t step = -1) {
    accel_check(accel_accelerator_log_text_to($self, tracker.c_str(), tag.c_str(), text.c_str(), step));
  }
  bool has_tracker(const std::string& name) const {
    int v = 0;
    accel_check(accel_accelerator_has_tracker($self, name.c_str(), &v));
    return v != 0;
  }
  void end_training() { accel_check(accel_accelerator_end_training($self)); }
}

/* Accelerate's PartialState: this process's place in the launch and the
   world's process group, shared with every accelerator of the process. */
%extend AccelPartialState {
  AccelPartialState(bool cpu = false, int64_t timeout_ms = 1800000) {
    accel_partial_state_options opts;
    accel_partial_state_options_init(&opts);
    opts.cpu = cpu ? 1 : 0;
    opts.timeout_ms = timeout_ms;
    accel_partial_state* out = 0;
    accel_check(accel_partial_state_create(&opts, &out));
    return out;
  }
  ~AccelPartialState() { accel_partial_state_free($self); }
  int process_index() const { int v = 0; accel_check(accel_partial_state_process_index($self, &v)); return v; }
  int local_process_index() const {
    int v = 0;
    accel_check(accel_partial_state_local_process_index($self, &v));
    return v;
  }
  int num_processes() const { int v = 0; accel_check(accel_partial_state_num_processes($self, &v)); return v; }
  accel_distributed_type distributed_type() const {
    accel_distributed_type v;
    accel_check(accel_partial_state_distributed_type($self, &v));
    return v;
  }
  std::string device() const { const char* v = 0; accel_check(accel_partial_state_device($self, &v)); return v; }
  /* {start, end, padded_length}, as Accelerator's split_range. */
  std::vector<int64_t> split_range(int64_t n, bool apply_padding = false) const {
    int64_t start = 0, end = 0, padded = 0;
    accel_check(accel_partial_state_split_range($self, n, apply_padding, &start, &end, &padded));
    return std::vector<int64_t>{start, end, padded};
  }
  void wait_for_everyone() { accel_check(accel_partial_state_wait_for_everyone($self)); }
}

%extend AccelProgress {
  AccelProgress(int64_t total, const std::string& description = "", bool main_process_only = true) {
    accel_progress* out = 0;
    accel_check(accel_progress_create(total, description.c_str(), main_process_only, &out));
    return out;
  }
  ~AccelProgress() { accel_progress_free($self); }
  void update(int64_t steps = 1) { accel_check(accel_progress_update($self, steps)); }
}

/* A running profile (Accelerate's accelerator.profile()); end() writes the
   Chrome trace. Dropping a running profile ends it too. */
%newobject AccelProfileRun::begin;
%newobject AccelProfileRun::begin_with;
%newobject AccelProfileRun::begin_scheduled;
%extend AccelProfileRun {
  /* ProfileKwargs' record_shapes, profile_memory, with_flops, with_stack and with_modules. */
  static AccelProfileRun* begin_with(const AccelAccelerator* accelerator, const std::string& output_trace_dir,
                                     bool record_shapes, bool profile_memory, bool with_flops, bool with_stack,
                                     bool with_modules) {
    const unsigned options = profile_options(record_shapes, profile_memory, with_flops, with_stack, with_modules);
    accel_profile* handle = 0;
    accel_check(accel_profile_begin_with(accelerator, output_trace_dir.c_str(), options, &handle));
    AccelProfileRun* run = new AccelProfileRun;
    run->handle = handle;
    return run;
  }
  /* The same under ProfileKwargs' schedule_option (accel_profile_begin_scheduled). */
  static AccelProfileRun* begin_scheduled(const AccelAccelerator* accelerator, const std::string& output_trace_dir,
                                          bool record_shapes, bool profile_memory, bool with_flops,
                                          bool with_stack, bool with_modules, int64_t wait, int64_t warmup,
                                          int64_t active, int64_t repeat, int64_t skip_first) {
    const unsigned options = profile_options(record_shapes, profile_memory, with_flops, with_stack, with_modules);
    accel_profile_schedule schedule;
    accel_profile_schedule_init(&schedule);
    schedule.wait = wait;
    schedule.warmup = warmup;
    schedule.active = active;
    schedule.repeat = repeat;
    schedule.skip_first = skip_first;
    accel_profile* handle = 0;
    accel_check(accel_profile_begin_scheduled(accelerator, output_trace_dir.c_str(), options, &schedule, &handle));
    AccelProfileRun* run = new AccelProfileRun;
    run->handle = handle;
    return run;
  }
  /* prof.step(): true when a scheduled cycle just ended and its trace was written. */
  bool step() {
    if (!$self->handle) accel_fail(ACCEL_ERR_STATE, "the profile has already ended");
    int ready = 0;
    accel_check(accel_profile_step($self->handle, &ready));
    return ready != 0;
  }
  static AccelProfileRun* begin(const AccelAccelerator* accelerator, const std::string& output_trace_dir) {
    accel_profile* handle = 0;
    accel_check(accel_profile_begin(accelerator, output_trace_dir.c_str(), &handle));
    AccelProfileRun* run = new AccelProfileRun;
    run->handle = handle;
    return run;
  }
  ~AccelProfileRun() {
    if ($self->handle) accel_profile_end($self->handle);
    delete $self;
  }
  void end() {
    if (!$self->handle) accel_fail(ACCEL_ERR_STATE, "the profile has already ended");
    // STATE (called on another thread than begin's): still running, the handle stays valid.
    const accel_status status = accel_profile_end($self->handle);
    if (status != ACCEL_ERR_STATE) $self->handle = 0;
    accel_check(status);
  }
}
