// The tensors a TorchScript file stores as its modules' attributes, read from
// the archive's data.pkl with libaccel's own pickle reader: no code record of
// the archive is read or run. An empty TorchScript model (loaded onto the meta
// device) takes its buffers from here, since a checkpoint need not hold them
// (transformers' non-persistent buffers, such as GPT-2's causal mask, are in
// no model.safetensors).
#pragma once

#include <ATen/core/Tensor.h>

#include <map>
#include <string>
#include <unordered_map>

namespace torch::jit {
struct Module;
}

namespace accel::detail {

// Every tensor attribute of every module object, by dotted name
// ("transformer.h.0.attn.bias"), each a read-only view of the mapped file:
// only the pages a caller touches are read. Throws IO naming the path for a
// file that is not a TorchScript archive or whose data.pkl holds anything but
// module objects and their data.
std::map<std::string, at::Tensor> script_archive_tensors(const std::string& path);

// torch::jit::load of path (extra files as there) without reading the
// bytes of its storages: the module's code, constants and structure are read
// and every parameter is then put on the meta device, every buffer filled
// from the archive (fill_script_buffers). LibTorch 1.13 cannot load a traced
// transformers model onto meta itself: its constant pooling compares tensor
// constants, which have no data there. The storages are allocated while the
// module loads, but never touched, so they cost address space, not memory,
// and are freed before this returns. Throws IO naming the path for a
// compressed record or an unreadable archive, and what torch::jit::load throws.
torch::jit::Module load_script_module_empty(const std::string& path,
                                            std::unordered_map<std::string, std::string>& extra_files);

// Gives every buffer of module (loaded from path onto the meta device) its
// values from the archive, copied into new CPU memory; parameters stay on
// meta. Everything is checked before the first buffer changes: throws IO
// naming a buffer the archive lacks or holds with another shape or dtype.
void fill_script_buffers(torch::jit::Module& module, const std::string& path);

}  // namespace accel::detail
