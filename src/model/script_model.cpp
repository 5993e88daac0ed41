// A TorchScript module behind accel::Model: named inputs mapped onto its
// forward's schema, named outputs read from what it returns, tied parameters
// listed once, and the state_dict names recorded at export time.
#include <ATen/ATen.h>
#include <torch/csrc/jit/api/module.h>
#include <torch/csrc/jit/runtime/graph_executor.h>
#include <torch/csrc/jit/serialization/import.h>

#include <cstdlib>
#include <nlohmann/json.hpp>
#include <set>
#include <unordered_set>

#include "accel/error.hpp"
#include "accel/logging.hpp"
#include "matmul/onednn_matmul.hpp"
#include "model/model_impl.hpp"
#include "model/nn_module_of.hpp"
#include "model/script_archive.hpp"
#include "model/script_model.hpp"
#include "model/script_offload.hpp"
#include "model/script_rewrites.hpp"
#include "model/script_tensor_parallel.hpp"
#include "model/script_units.hpp"
#include "sharding/strategy.hpp"
#include "state/environment.hpp"

namespace accel::detail {

namespace {

// The extra file an export script writes with torch.jit.save(..., _extra_files=
// {kStateDictKeys: json.dumps(list(model.state_dict().keys()))}).
constexpr const char* kStateDictKeys = "accel/state_dict_keys.json";
// And with _extra_files={kConfig: model.config.to_json_string()}: a
// transformers model's config, which save_model writes as config.json so that
// from_pretrained reads the saved directory as it is.
constexpr const char* kConfig = "accel/config.json";

std::string join(const std::string& prefix, const std::string& name) {
  return prefix.empty() ? name : prefix + "." + name;
}

std::string list_names(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& name : names) out += (out.empty() ? "" : ", ") + name;
  return "(" + out + ")";
}

// LibTorch lists a tensor shared by two modules (GPT-2's lm_head.weight and
// transformer.wte.weight) under both names. Optimizers, gradient buckets and
// broadcasts must see it once or its gradient is applied twice; the first name
// is the one transformers keeps.
NamedTensors unique_tensors(NamedTensors all) {
  std::unordered_set<const c10::TensorImpl*> seen;
  NamedTensors out;
  for (auto& entry : all) {
    if (seen.insert(entry.second.unsafeGetTensorImpl()).second) out.push_back(std::move(entry));
  }
  return out;
}

// The interpreter's message starts with "The following operation failed in
// the TorchScript interpreter" and a traceback; the cause (an embedding index
// out of range, float ids) is its last line. LibTorch 2.x appends the C++
// backtrace ("Exception raised from ...", "frame #N: ...") after the cause,
// so that is cut off first.
std::string interpreter_cause(std::string message) {
  if (message.find("TorchScript interpreter") == std::string::npos) return message;
  for (const char* backtrace : {"\nException raised from ", "\nframe #0: "}) {
    if (size_t at = message.find(backtrace); at != std::string::npos) message.resize(at);
  }
  size_t end = message.find_last_not_of(" \n");
  if (end == std::string::npos) return message;
  size_t start = message.rfind('\n', end);
  return message.substr(start == std::string::npos ? 0 : start + 1,
                        end + 1 - (start == std::string::npos ? 0 : start + 1));
}

class ScriptModel final : public ModelImpl {
 public:
  ScriptModel(torch::jit::Module module, std::vector<std::string> output_names,
              std::optional<std::set<std::string>> state_dict_keys, std::string config_json)
      : module_(std::move(module)),
        optimize_(get_env_flag("ACCEL_TORCHSCRIPT_OPTIMIZE", false)),
        output_names_(std::move(output_names)),
        state_dict_keys_(std::move(state_dict_keys)),
        config_json_(std::move(config_json)) {}
  const std::string& config_json() const { return config_json_; }
  ~ScriptModel() override {
    unregister_script_units(this);
    unregister_script_splits(this);
    unregister_script_offload(this);
  }

  torch::jit::Module& module() { return module_; }
  torch::jit::Module& module_for_rewrite(const std::string& what) {
    require(!ran_, ErrorCode::Unsupported,
            what +
                " rewrites the TorchScript graph, which the executor fixes at the first forward; this model already "
                "ran one, so load it again and call " +
                what + " before running it");
    return module_;
  }

  NamedTensors named_parameters() const override {
    NamedTensors out;
    for (const auto& item : module_.named_parameters(true)) out.emplace_back(item.name, item.value);
    return unique_tensors(std::move(out));
  }
  NamedTensors named_buffers() const override {
    NamedTensors out;
    for (const auto& item : module_.named_buffers(true)) out.emplace_back(item.name, item.value);
    return unique_tensors(std::move(out));
  }
  // Each tensor once, under its first name; with the export-time sidecar, only
  // the names the Python model's state_dict() had (transformers' non-persistent
  // buffers such as GPT-2's attn.bias stay out of model.safetensors).
  NamedTensors state_dict() const override {
    NamedTensors out;
    for (const auto& module : module_.named_modules()) {
      for (const auto& item : module.value.named_parameters(false))
        out.emplace_back(join(module.name, item.name), item.value);
      for (const auto& item : module.value.named_buffers(false))
        out.emplace_back(join(module.name, item.name), item.value);
    }
    if (state_dict_keys_) {
      NamedTensors kept;
      for (auto& entry : out) {
        if (state_dict_keys_->count(entry.first)) kept.push_back(std::move(entry));
      }
      out = std::move(kept);
    }
    return unique_tensors(std::move(out));
  }
  void set_training(bool training) override { module_.train(training); }
  bool training() const override { return module_.is_training(); }

 protected:
  // FULL_SHARD: the whole model one unit (NO_WRAP), or the submodules named
  // by class or path units of their own inside a root unit
  // (TRANSFORMER_BASED_WRAP, see script_units.hpp).
  std::vector<UnitLayout> wrap_units(const WrapPolicy& policy) override {
    if (policy.classes.empty()) {
      require(policy.min_num_params == 0 || policy.min_num_params == kOneUnit, ErrorCode::Unsupported,
              "prepare(model): fsdp_min_num_params " + std::to_string(policy.min_num_params) +
                  " (SIZE_BASED_WRAP): a TorchScript model is wrapped whole (NO_WRAP) or by submodule class "
                  "(TRANSFORMER_BASED_WRAP, fsdp_transformer_layer_cls_to_wrap)");
      return ModelImpl::wrap_units(policy);
    }
    require(!ran_, ErrorCode::Unsupported,
            "prepare(model): fsdp_transformer_layer_cls_to_wrap rewrites the TorchScript graph, which the executor "
            "fixes at the first forward; this model already ran one, so prepare it before running it");
    NamedTensors trainable;
    for (auto& [name, p] : named_parameters()) {
      if (p.requires_grad()) trainable.emplace_back(name, p);
    }
    return wrap_script_units(module_, policy.classes, trainable, weak_from_this());
  }

  // Tensor parallelism: transformers' GPT-2 split by heads and feed-forward
  // columns through a graph rewrite (script_tensor_parallel.hpp).
  ParameterSplits split_for_tensor_parallel(const TensorParallelSlot& slot) override {
    require(!ran_, ErrorCode::Unsupported,
            "prepare(model): tp_size " + std::to_string(slot.size) +
                " rewrites the TorchScript graph, which the executor fixes at the first forward; this model already "
                "ran one, so prepare it before running it");
    return split_script_for_tensor_parallel(module_, config_json_, slot, this);
  }

  at::Tensor run(const at::Tensor& input) override {
    ran_ = true;
    torch::jit::GraphOptimizerEnabledGuard unoptimized(optimize_);
    c10::IValue output = module_.forward({input});
    require(output.isTensor(), ErrorCode::InvalidArgument,
            "the TorchScript model's forward returned " + output.tagKind() + ", not a tensor");
    return output.toTensor();
  }
  NamedTensors run_named(const NamedTensors& inputs) override {
    ran_ = true;
    torch::jit::GraphOptimizerEnabledGuard unoptimized(optimize_);
    std::vector<c10::IValue> stack = bind_inputs(inputs);
    c10::IValue output;
    try {
      output = module_.get_method("forward")(std::move(stack));
    } catch (const std::exception& e) {
      throw std::runtime_error(interpreter_cause(e.what()));
    }
    return name_outputs(output);
  }
  void move_to(const c10::Device& device) override {
    module_.to(device);
    retarget_constants(module_, device);  // a trace made on the CPU runs on the GPU too
  }

 private:
  // The forward's arguments in schema order: every named input in its slot,
  // omitted ones from their defaults.
  std::vector<c10::IValue> bind_inputs(const NamedTensors& inputs) const {
    const auto& arguments = module_.get_method("forward").function().getSchema().arguments();
    std::vector<std::string> expected, given;
    for (size_t i = 1; i < arguments.size(); ++i) expected.push_back(arguments[i].name());  // 0 is self
    for (const auto& input : inputs) given.push_back(input.first);
    const std::string context = ": the model's forward takes " + list_names(expected) + ", given " + list_names(given);
    for (const auto& name : given) {
      require_arg(std::find(expected.begin(), expected.end(), name) != expected.end(),
                  "forward: unknown input \"" + name + "\"" + context);
    }
    std::vector<c10::IValue> stack;
    for (size_t i = 1; i < arguments.size(); ++i) {
      const c10::Argument& argument = arguments[i];
      auto it = std::find_if(inputs.begin(), inputs.end(), [&](const auto& in) { return in.first == argument.name(); });
      if (it == inputs.end()) {
        require_arg(argument.default_value().has_value(),
                    "forward: missing input \"" + argument.name() + "\" (no default)" + context);
        stack.push_back(*argument.default_value());
        continue;
      }
      c10::IValue value(it->second);
      require_arg(value.type()->isSubtypeOf(*argument.type()),
                  "forward: input \"" + argument.name() + "\" is a tensor but the model's forward declares it " +
                      argument.type()->annotation_str() + context);
      stack.push_back(std::move(value));
    }
    return stack;
  }

  // The output naming rule (see accel.h, accel_model_forward_named).
  NamedTensors name_outputs(const c10::IValue& output) const {
    NamedTensors named;
    std::vector<std::string> carried;  // names the output itself carries
    auto add = [&](const std::string& name, const c10::IValue& value) {
      if (value.isNone()) return;  // transformers' loss when no labels were given
      require(value.isTensor(), ErrorCode::InvalidArgument,
              "forward: output \"" + name + "\" of the TorchScript model is " + value.tagKind() + ", not a tensor");
      named.emplace_back(name, value.toTensor());
    };
    if (output.isGenericDict()) {
      for (const auto& item : output.toGenericDict()) {
        require(item.key().isString(), ErrorCode::InvalidArgument,
                "forward: the TorchScript model returned a dict with a " + item.key().tagKind() + " key, not strings");
        carried.push_back(item.key().toStringRef());
        add(carried.back(), item.value());
      }
    } else if (output.isTuple() && output.type()->expectRef<c10::TupleType>().schema()) {
      const auto& elements = output.toTupleRef().elements();
      const auto& fields = output.type()->expectRef<c10::TupleType>().schema()->arguments();
      for (size_t i = 0; i < elements.size(); ++i) {
        carried.push_back(fields.at(i).name());
        add(carried.back(), elements[i]);
      }
    } else {
      std::vector<c10::IValue> elements;
      if (output.isTuple()) {
        for (const auto& element : output.toTupleRef().elements()) elements.push_back(element);
      } else if (output.isList()) {
        for (const auto& element : output.toListRef()) elements.push_back(element);
      } else {
        elements.push_back(output);
      }
      require_arg(output_names_.empty() || output_names_.size() == elements.size(),
                  "forward: the model returned " + std::to_string(elements.size()) + " outputs but " +
                      std::to_string(output_names_.size()) + " output names were given " + list_names(output_names_));
      const bool single = !output.isTuple() && !output.isList();
      for (size_t i = 0; i < elements.size(); ++i) {
        add(!output_names_.empty() ? output_names_[i] : single ? "output" : std::to_string(i), elements[i]);
      }
      return named;
    }
    require_arg(output_names_.empty() || output_names_ == carried,
                "forward: the model's outputs are named " + list_names(carried) +
                    ", but the output names given at load time are " + list_names(output_names_));
    return named;
  }

  mutable torch::jit::Module module_;
  // Off: the graph executor's optimisations (profiling, fusion, differentiable
  // graphs) slow the training of a traced transformer on LibTorch 1.13's CPU.
  // Measured on the exported test GPT-2 (8 x 64 tokens, AdamW, 1 thread, torch
  // 1.13 with the same executor): on 3235/3256 tokens/s and 305 MB peak RSS,
  // off 4217/4550 tokens/s and 276 MB. ACCEL_TORCHSCRIPT_OPTIMIZE=1 turns them
  // on, to measure where they may pay (fusing elementwise chains on a GPU:
  // bench/lm_gpu.sh runs both).
  bool optimize_ = false;
  bool ran_ = false;  // a forward ran (the executor's plan is fixed)
  std::vector<std::string> output_names_;
  std::optional<std::set<std::string>> state_dict_keys_;
  std::string config_json_;  // empty: the file records none
};

}  // namespace

torch::jit::Module* script_module_for_rewrite(ModelImpl& model, const std::string& what) {
  auto* script = dynamic_cast<ScriptModel*>(&model);
  return script ? &script->module_for_rewrite(what) : nullptr;
}

std::shared_ptr<ModelImpl> load_script_model(const std::string& path, std::vector<std::string> output_names,
                                             bool empty) {
  std::set<std::string> unique_names;
  for (const auto& name : output_names) {
    require_arg(!name.empty(), "from_torchscript: an output name is empty");
    require_arg(unique_names.insert(name).second, "from_torchscript: output name \"" + name + "\" is given twice");
  }
  torch::jit::ExtraFilesMap extra{{kStateDictKeys, ""}, {kConfig, ""}};
  torch::jit::Module module =
      empty ? load_script_module_empty(path, extra) : torch::jit::load(path, c10::nullopt, extra);
  // ACCEL_TORCHSCRIPT_REWRITES=0 runs the graph exactly as exported (to compare
  // results or speed with and without the rewrites).
  const char* rewrites = std::getenv("ACCEL_TORCHSCRIPT_REWRITES");
  if (rewrites == nullptr || std::string(rewrites) != "0") {
    const std::size_t gelu = fuse_tanh_gelu(module);
    const std::size_t softmax = fuse_attention_softmax(module);
    const std::size_t products = onednn::available() ? onednn_ops(module) : 0;
    // ACCELERATE_LOG_LEVEL=debug shows what the rewrites found in a model.
    Logger("accel.model")
        .debug("TorchScript \"" + path + "\": " + std::to_string(gelu) + " tanh-GELU chain(s) fused, " +
               std::to_string(softmax) + " attention softmax chain(s) fused, " + std::to_string(products) +
               " product/GELU node(s) pointed at libaccel's (ACCEL_TORCHSCRIPT_REWRITES=0 turns these off)");
  }
  std::optional<std::set<std::string>> keys;
  if (!extra[kStateDictKeys].empty()) {
    nlohmann::json parsed = nlohmann::json::parse(extra[kStateDictKeys], nullptr, false);
    require(parsed.is_array(), ErrorCode::IO,
            "TorchScript file \"" + path + "\": " + kStateDictKeys + " is not a JSON array of names");
    keys.emplace();
    for (const auto& name : parsed) {
      require(name.is_string(), ErrorCode::IO,
              "TorchScript file \"" + path + "\": " + kStateDictKeys + " holds " + name.dump() + ", not a name");
      keys->insert(name.get<std::string>());
    }
  }
  if (!extra[kConfig].empty()) {
    const nlohmann::json config = nlohmann::json::parse(extra[kConfig], nullptr, false);
    require(config.is_object(), ErrorCode::IO,
            "TorchScript file \"" + path + "\": " + kConfig + " is not a JSON object (a transformers config)");
  }
  return std::make_shared<ScriptModel>(std::move(module), std::move(output_names), std::move(keys), extra[kConfig]);
}

torch::jit::Module* script_module_of(ModelImpl& model) {
  auto* script = dynamic_cast<ScriptModel*>(&model);
  return script ? &script->module() : nullptr;
}

std::optional<std::string> exported_config_json(const ModelImpl& model) {
  const auto* script = dynamic_cast<const ScriptModel*>(&model);
  if (script == nullptr || script->config_json().empty()) return std::nullopt;
  return script->config_json();
}

}  // namespace accel::detail
