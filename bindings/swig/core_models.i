/* Models (with their named inputs and outputs and big-model dispatch), optimizers
 * and schedulers: accel_model.h and big_model.h.
 * Part of accel_core.i, which declares the handles and includes this file. */

%newobject AccelModel::from_json;
%newobject AccelModel::from_torchscript;
%newobject AccelModel::forward;
%extend AccelModel {
  static AccelModel* from_json(const std::string& spec) {
    accel_model* out = 0;
    accel_check(accel_model_from_json(spec.c_str(), &out));
    return out;
  }
  static AccelModel* from_torchscript(const std::string& path) {
    accel_model* out = 0;
    accel_check(accel_model_from_torchscript(path.c_str(), &out));
    return out;
  }
  ~AccelModel() { accel_model_free($self); }
  AccelTensor* forward(const AccelTensor* input) {
    accel_tensor* out = 0;
    accel_check(accel_model_forward($self, input, &out));
    return out;
  }
  void train(bool training = true) { accel_check(accel_model_train($self, training)); }
  int64_t num_parameters(bool trainable_only = false) const {
    int64_t n = 0;
    accel_check(accel_model_num_parameters($self, trainable_only, &n));
    return n;
  }
}

/* Named tensors in and out of a model (accel_tensor_map): the language layers
   turn them into a dict/Map/map. */
%newobject AccelTensorMap::get;
%extend AccelTensorMap {
  AccelTensorMap() {
    accel_tensor_map* out = 0;
    accel_check(accel_tensor_map_create(&out));
    return out;
  }
  ~AccelTensorMap() { accel_tensor_map_free($self); }
  void set(const std::string& name, const AccelTensor* tensor) {
    accel_check(accel_tensor_map_set($self, name.c_str(), tensor));
  }
  size_t count() const {
    size_t n = 0;
    accel_check(accel_tensor_map_count($self, &n));
    return n;
  }
  std::string name_at(size_t index) const {
    const char* name = 0;
    accel_check(accel_tensor_map_name_at($self, index, &name));
    return name;
  }
  AccelTensor* get(const std::string& name) const {
    accel_tensor* out = 0;
    accel_check(accel_tensor_map_get($self, name.c_str(), &out));
    return out;
  }
}

/* ---- big models (accel/big_model.h) ----
   Device maps and sizes cross as JSON strings; the language layers turn them
   into a dict / Map / map. An empty string stands for C's NULL (no dtype, no
   offload folder, the default map). */
%newobject AccelModel::from_json_empty;
%newobject AccelModel::from_torchscript_empty;
%extend AccelModel {
  static AccelModel* from_json_empty(const std::string& spec) {
    accel_model* out = 0;
    accel_check(accel_model_from_json_empty(spec.c_str(), &out));
    return out;
  }
  static AccelModel* from_torchscript_empty(const std::string& path, const std::vector<std::string>& output_names) {
    std::vector<const char*> names;
    for (const auto& name : output_names) names.push_back(name.c_str());
    accel_model* out = 0;
    accel_check(accel_model_from_torchscript_empty(path.c_str(), names.data(), names.size(), &out));
    return out;
  }
  std::string module_sizes_json(const std::string& dtype = "") const {
    char* out = 0;
    accel_check(accel_model_module_sizes($self, accel_null_if_empty(dtype), &out));
    return accel_take_string(out);
  }
  /* transformers' hf_device_map as JSON ("{}": not dispatched). */
  std::string hf_device_map_json() const {
    char* out = 0;
    accel_check(accel_model_hf_device_map($self, &out));
    return accel_take_string(out);
  }
  std::string infer_auto_device_map_json(const std::string& max_memory_json,
                                         const std::vector<std::string>& no_split_module_classes,
                                         const std::string& dtype = "") const {
    std::vector<const char*> names;
    for (const auto& name : no_split_module_classes) names.push_back(name.c_str());
    char* out = 0;
    /* "" is NULL: every GPU's free memory and the RAM available (accel_available_memory). */
    accel_check(accel_infer_auto_device_map($self, accel_null_if_empty(max_memory_json), names.empty() ? 0 : names.data(),
                                            names.size(), accel_null_if_empty(dtype), &out));
    return accel_take_string(out);
  }
  std::string balanced_memory_json(const std::string& max_memory_json,
                                   const std::vector<std::string>& no_split_module_classes,
                                   const std::string& dtype = "", bool low_zero = false) const {
    std::vector<const char*> names;
    for (const auto& name : no_split_module_classes) names.push_back(name.c_str());
    char* out = 0;
    /* "" is NULL: the budgets read from the devices (a lone GPU then keeps 10% free). */
    accel_check(accel_balanced_memory($self, accel_null_if_empty(max_memory_json), names.empty() ? 0 : names.data(),
                                      names.size(), accel_null_if_empty(dtype), low_zero ? 1 : 0, &out));
    return accel_take_string(out);
  }
  void verify_device_map_json(const std::string& device_map_json) const {
    accel_check(accel_verify_device_map($self, device_map_json.c_str()));
  }
  /* "" is the CPU. */
  void disk_offload(const std::string& offload_dir, const std::string& execution_device = "") {
    accel_check(accel_disk_offload_on_device($self, offload_dir.c_str(), accel_null_if_empty(execution_device)));
  }
  void dispatch_model_json(const std::string& device_map_json, const std::string& offload_dir = "") {
    accel_check(accel_dispatch_model($self, device_map_json.c_str(), accel_null_if_empty(offload_dir)));
  }
  /* "" is NULL: the device of the first parameter (Accelerate's default). */
  void cpu_offload(const std::string& execution_device = "", bool offload_buffers = false) {
    accel_check(accel_cpu_offload($self, accel_null_if_empty(execution_device), offload_buffers ? 1 : 0));
  }
  void materialize(const std::string& checkpoint, const std::string& dtype = "") {
    accel_check(accel_model_materialize($self, checkpoint.c_str(), accel_null_if_empty(dtype)));
  }
  void load_checkpoint_and_dispatch_json(const std::string& checkpoint, const std::string& device_map_json,
                                         const std::string& offload_folder = "", const std::string& dtype = "") {
    accel_check(accel_load_checkpoint_and_dispatch($self, checkpoint.c_str(), accel_null_if_empty(device_map_json),
                                                   accel_null_if_empty(offload_folder), accel_null_if_empty(dtype)));
  }
}

%newobject AccelModel::from_torchscript_outputs;
%newobject AccelModel::forward_named;
%newobject AccelModel::named_parameters;
%newobject AccelModel::named_buffers;
%extend AccelModel {
  static AccelModel* from_torchscript_outputs(const std::string& path, const std::vector<std::string>& output_names) {
    std::vector<const char*> names;
    for (const auto& name : output_names) names.push_back(name.c_str());
    accel_model* out = 0;
    accel_check(accel_model_from_torchscript_outputs(path.c_str(), names.data(), names.size(), &out));
    return out;
  }
  AccelTensorMap* forward_named(const AccelTensorMap* inputs) {
    accel_tensor_map* out = 0;
    accel_check(accel_model_forward_named($self, inputs, &out));
    return out;
  }
  AccelTensorMap* named_parameters() const {
    accel_tensor_map* out = 0;
    accel_check(accel_model_named_parameters($self, &out));
    return out;
  }
  AccelTensorMap* named_buffers() const {
    accel_tensor_map* out = 0;
    accel_check(accel_model_named_buffers($self, &out));
    return out;
  }
  /* PyTorch's load_state_dict; returns {"missing_keys": [...], "unexpected_keys": [...]}. */
  std::string load_state_dict_report_json(const AccelTensorMap* tensors, bool strict = true) {
    char* out = 0;
    accel_check(accel_model_load_state_dict_report($self, tensors, strict ? 1 : 0, &out));
    return accel_take_string(out);
  }
}

%extend AccelOptimizer {
  AccelOptimizer(AccelModel* model, const accel_optimizer_options* options = 0) {
    accel_optimizer* out = 0;
    accel_check(accel_optimizer_create(model, options, &out));
    return out;
  }
  ~AccelOptimizer() { accel_optimizer_free($self); }
  void step() { accel_check(accel_optimizer_step($self)); }
  void zero_grad() { accel_check(accel_optimizer_zero_grad($self)); }
  double get_lr() const {
    double lr = 0;
    accel_check(accel_optimizer_get_lr($self, &lr));
    return lr;
  }
  void set_lr(double lr) { accel_check(accel_optimizer_set_lr($self, lr)); }
  bool step_was_skipped() const {
    int v = 0;
    accel_check(accel_optimizer_step_was_skipped($self, &v));
    return v != 0;
  }
}

%extend AccelScheduler {
  AccelScheduler(AccelOptimizer* optimizer, const accel_scheduler_options* options,
                 const std::vector<int64_t>& milestones = std::vector<int64_t>()) {
    accel_scheduler_options o = *options;
    o.milestones = milestones.data();
    o.num_milestones = milestones.size();
    accel_scheduler* out = 0;
    accel_check(accel_scheduler_create(optimizer, &o, &out));
    return out;
  }
  ~AccelScheduler() { accel_scheduler_free($self); }
  void step() { accel_check(accel_scheduler_step($self)); }
  void step_metric(double metric) { accel_check(accel_scheduler_step_metric($self, metric)); }
  double get_last_lr() const {
    double lr = 0;
    accel_check(accel_scheduler_get_last_lr($self, &lr));
    return lr;
  }
  int64_t last_epoch() const {
    int64_t e = 0;
    accel_check(accel_scheduler_last_epoch($self, &e));
    return e;
  }
}
