// Tensor parallelism for TorchScript transformers: transformers' GPT-2 as
// exported by torch.jit.trace (docs/transformers.md) split by heads and
// feed-forward columns, with transformers' plan for it:
//   {"h.*.attn.c_attn": "colwise", "h.*.attn.c_proj": "rowwise",
//    "h.*.mlp.c_fc": "colwise", "h.*.mlp.c_proj": "rowwise"}
// found by class (each GPT2Attention's c_attn and c_proj, each GPT2MLP's c_fc
// and c_proj: Conv1D or Linear submodules); BERT's and Llama's (LlamaAttention's
// q/k/v_proj and o_proj, LlamaMLP's gate/up_proj and down_proj) likewise, and
// Llama's under Mistral's, Qwen2's, Gemma's, Olmo's, Granite's, Cohere's and
// StableLm's class names.
//
// A traced module keeps each submodule's forward as its own method, called
// from its parent's graph (prim::CallMethod). Before the first forward, every
// call of a split submodule's class becomes accel::tp_linear(child, input),
// which finds the split registered for that child object and runs
// Megatron's column- or row-parallel product with the child's own (sliced)
// weight and bias (parallel/tensor_parallel.hpp); a child of the same class
// with no split registered runs its forward as before. A column-parallel
// output the parent cuts with aten::split (GPT-2's packed q, k, v) is cut by
// a size that follows the output's width, so every rank holds the same heads
// of each of q, k and v; the heads' views use -1 heads (transformers' GPT-2
// since 4.4x), so the rest of the graph runs unchanged on this rank's heads.
#pragma once

#include <string>

#include "parallel/tensor_parallel.hpp"

namespace torch::jit {
struct Module;
}

namespace accel::detail {

class ModelImpl;

// Splits `module` for rank slot.rank of a group of slot.size and returns the
// split parameters by state-dict name. Everything is checked before anything
// changes: Unsupported naming the classes seen for a model with no GPT-2
// attention or MLP, a split submodule that no graph calls as a method or
// whose call takes more than one tensor, and dropout with p > 0 anywhere (a
// traced dropout draws its own mask on each rank); InvalidArgument naming
// the submodule, the width and tp_size for a width that does not divide, and
// n_head (from the config recorded at export) that tp_size does not divide.
// `config_json`: that config, or empty. Registers the split children for
// `owner` (unregister_script_splits undoes that).
ParameterSplits split_script_for_tensor_parallel(torch::jit::Module& module, const std::string& config_json,
                                                 const TensorParallelSlot& slot, const ModelImpl* owner);

// Forgets every split registered for `owner` (its destructor calls this).
void unregister_script_splits(const ModelImpl* owner);

}  // namespace accel::detail
