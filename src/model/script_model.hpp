// What a TorchScript file exported from transformers carries beside its graph.
#pragma once

#include <optional>
#include <string>

#include "model/model_impl.hpp"

namespace accel::detail {

// The transformers config recorded at export (the extra file
// "accel/config.json", docs/transformers.md), as its JSON text; none for a
// model from any other source. save_model writes it as config.json.
std::optional<std::string> exported_config_json(const ModelImpl& model);

}  // namespace accel::detail
