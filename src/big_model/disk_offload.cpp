// Accelerate's disk_offload: a loaded model's weights written to a folder and
// streamed back around each node's forward, by load_checkpoint_and_dispatch
// with the whole model on "disk".
#include <filesystem>

#include "accel/big_model.hpp"
#include "accel/error.hpp"
#include "big_model/module_tree.hpp"
#include "core/file_io.hpp"
#include "formats/tensor_io.hpp"
#include "model/model_impl.hpp"
#include "model/spec/graph.hpp"

namespace accel {

void disk_offload(const Model& model, const std::string& offload_dir) {
  auto root = detail::module_of(model, "disk_offload");
  // Checked before anything is written: the hook that brings weights in is a JSON graph's.
  require(std::dynamic_pointer_cast<detail::GraphModuleImpl>(root) != nullptr, ErrorCode::Unsupported,
          "disk_offload: needs a JSON graph model (\"inputs\"/\"nodes\"), whose nodes bring their weights in "
          "before they run");
  require_arg(!offload_dir.empty(), "disk_offload: offload_dir is empty");
  const auto tensors = detail::named_module_tensors(*root);
  for (const auto& [name, tensor] : tensors) {
    require_arg(!tensor.is_meta(), "disk_offload: \"" + name +
                                       "\" has no data (the meta device): load the weights first "
                                       "(load_checkpoint_and_dispatch offloads an empty model from a checkpoint)");
  }
  std::error_code ec;
  std::filesystem::create_directories(offload_dir, ec);
  require(!ec, ErrorCode::IO, "disk_offload: \"" + offload_dir + "\" cannot be created: " + ec.message());
  // One safetensors file of the weights as they are: the dispatch maps it and
  // reads each tensor from it, casting nothing and writing no copy.
  const std::string weights = (std::filesystem::path(offload_dir) / "model.safetensors").string();
  {
    detail::AtomicFileWriter out(weights);
    detail::write_tensors(out, tensors, {{"format", "pt"}});
    out.commit();
  }
  load_checkpoint_and_dispatch(model, weights, {{"", "disk"}}, offload_dir);
}

}  // namespace accel
