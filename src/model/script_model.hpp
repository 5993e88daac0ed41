// What a TorchScript file exported from transformers carries beside its graph.
#pragma once

#include <optional>
#include <string>

#include "model/model_impl.hpp"

namespace torch::jit {
struct Module;
}

namespace accel::detail {

// The transformers config recorded at export (the extra file
// "accel/config.json", docs/transformers.md), as its JSON text; none for a
// model from any other source. save_model writes it as config.json.
std::optional<std::string> exported_config_json(const ModelImpl& model);

// The module of a TorchScript model, to read or refill its tensors (not to
// rewrite its graph: script_module_for_rewrite); null for any other model.
torch::jit::Module* script_module_of(ModelImpl& model);

}  // namespace accel::detail
