#include "model/script_rewrites.hpp"

#include <ATen/ATen.h>
#include <torch/csrc/jit/api/module.h>
#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/subgraph_matcher.h>
#include <torch/csrc/jit/passes/subgraph_rewrite.h>

#include <cmath>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace accel::detail {

namespace {

// The chain as torch.jit.trace records NewGELUActivation.forward (constants
// become graph inputs here, checked by the filter below) ...
constexpr const char* kTanhGeluChain = R"IR(
graph(%x, %half, %three, %kappa, %beta, %one, %alpha_inner, %alpha_outer):
  %a = aten::mul(%x, %half)
  %b = aten::pow(%x, %three)
  %c = aten::mul(%b, %kappa)
  %d = aten::add(%x, %c, %alpha_inner)
  %e = aten::mul(%d, %beta)
  %f = aten::tanh(%e)
  %g = aten::add(%f, %one, %alpha_outer)
  %h = aten::mul(%a, %g)
  return (%h))IR";

// ... and what replaces it.
constexpr const char* kTanhGelu = R"IR(
graph(%x, %half, %three, %kappa, %beta, %one, %alpha_inner, %alpha_outer):
  %approximate : str = prim::Constant[value="tanh"]()
  %h = aten::gelu(%x, %approximate)
  return (%h))IR";

// GPT-2's attention softmax as transformers' eager attention traces it (the
// scaled scores cast to their own dtype, float32 at the trace, masked by the
// causal buffer, plus the additive padding mask) ...
constexpr const char* kMaskedSoftmaxChain = R"IR(
graph(%scores, %divisor, %dtype, %non_blocking, %copy, %memory_format, %causal, %mask_value, %additive, %alpha,
      %dim, %softmax_dtype):
  %a = aten::div(%scores, %divisor)
  %b = aten::to(%a, %dtype, %non_blocking, %copy, %memory_format)
  %c = aten::where(%causal, %b, %mask_value)
  %d = aten::add(%c, %additive, %alpha)
  %e = aten::softmax(%d, %dim, %softmax_dtype)
  return (%e))IR";

constexpr const char* kMaskedSoftmax = R"IR(
graph(%scores, %divisor, %dtype, %non_blocking, %copy, %memory_format, %causal, %mask_value, %additive, %alpha,
      %dim, %softmax_dtype):
  %e = libaccel::masked_softmax(%scores, %divisor, %causal, %mask_value, %additive)
  return (%e))IR";

// ... and without the padding mask.
constexpr const char* kCausalSoftmaxChain = R"IR(
graph(%scores, %divisor, %dtype, %non_blocking, %copy, %memory_format, %causal, %mask_value, %dim, %softmax_dtype):
  %a = aten::div(%scores, %divisor)
  %b = aten::to(%a, %dtype, %non_blocking, %copy, %memory_format)
  %c = aten::where(%causal, %b, %mask_value)
  %e = aten::softmax(%c, %dim, %softmax_dtype)
  return (%e))IR";

constexpr const char* kCausalSoftmax = R"IR(
graph(%scores, %divisor, %dtype, %non_blocking, %copy, %memory_format, %causal, %mask_value, %dim, %softmax_dtype):
  %none : NoneType = prim::Constant()
  %e = libaccel::masked_softmax(%scores, %divisor, %causal, %mask_value, %none)
  return (%e))IR";

// Llama's (and Mistral's, Qwen2's, Gemma's) attention softmax as their eager
// attention traces it: the scores times the scaling, plus the mask, softmax
// in float32 ...
constexpr const char* kScaledSoftmaxChain = R"IR(
graph(%scores, %scale, %additive, %alpha, %dim, %softmax_dtype):
  %a = aten::mul(%scores, %scale)
  %b = aten::add(%a, %additive, %alpha)
  %c = aten::softmax(%b, %dim, %softmax_dtype)
  return (%c))IR";

constexpr const char* kScaledSoftmax = R"IR(
graph(%scores, %scale, %additive, %alpha, %dim, %softmax_dtype):
  %c = libaccel::scaled_softmax(%scores, %scale, %additive)
  return (%c))IR";

// The number a graph constant holds: a Python float or int, or a one-element
// tensor (the trace stores `0.5 * x`'s 0.5 as a tensor constant).
std::optional<double> constant_number(torch::jit::Value* value) {
  std::optional<c10::IValue> constant = torch::jit::toIValue(value);
  if (!constant) return std::nullopt;
  if (constant->isDouble()) return constant->toDouble();
  if (constant->isInt()) return static_cast<double>(constant->toInt());
  if (constant->isTensor()) {
    const at::Tensor& tensor = constant->toTensor();
    if (tensor.numel() == 1 && tensor.is_floating_point()) return tensor.item<double>();
  }
  return std::nullopt;
}

// True when the constant equals `expected` as a float32 constant can: the
// trace keeps sqrt(2/pi) as 0.797884583..., a float32 rounding.
bool holds(torch::jit::Value* value, double expected) {
  std::optional<double> number = constant_number(value);
  return number && std::abs(*number - expected) <= 1e-6 * std::abs(expected);
}

// The graph values a match bound to a pattern's names, and what their
// constants hold (false where a value is not a constant of that kind).
struct Bound {
  const torch::jit::Match& match;
  const std::unordered_map<std::string, torch::jit::Value*>& names;

  torch::jit::Value* operator()(const char* name) const { return match.values_map.at(names.at(name)); }
  bool has(const char* name) const { return names.count(name) > 0; }
  bool is_tensor(const char* name) const { return (*this)(name)->type()->kind() == c10::TypeKind::TensorType; }
  bool is_int(const char* name, int64_t expected) const {
    std::optional<c10::IValue> value = torch::jit::toIValue((*this)(name));
    return value && value->isInt() && value->toInt() == expected;
  }
  bool is_false(const char* name) const {
    std::optional<c10::IValue> value = torch::jit::toIValue((*this)(name));
    return value && value->isBool() && !value->toBool();
  }
  bool is_none(const char* name) const {
    std::optional<c10::IValue> value = torch::jit::toIValue((*this)(name));
    return value && value->isNone();
  }
};

bool is_tanh_gelu(const torch::jit::Match& match, const std::unordered_map<std::string, torch::jit::Value*>& names) {
  const Bound bound{match, names};
  const double sqrt_2_over_pi = std::sqrt(2.0 / M_PI);
  return holds(bound("half"), 0.5) && holds(bound("three"), 3.0) && holds(bound("kappa"), 0.044715) &&
         holds(bound("beta"), sqrt_2_over_pi) && holds(bound("one"), 1.0) && holds(bound("alpha_inner"), 1.0) &&
         holds(bound("alpha_outer"), 1.0);
}

// The chain's constants as libaccel::masked_softmax assumes them: a cast to
// float32 that neither copies nor blocks, a softmax over the last dimension
// in the logits' dtype, an addition of the mask itself (alpha 1).
bool is_masked_softmax(const torch::jit::Match& match,
                       const std::unordered_map<std::string, torch::jit::Value*>& names) {
  const Bound bound{match, names};
  const int64_t float32 = static_cast<int64_t>(at::kFloat);
  return bound.is_int("dtype", float32) && bound.is_false("non_blocking") && bound.is_false("copy") &&
         bound.is_none("memory_format") && bound.is_int("dim", -1) && bound.is_none("softmax_dtype") &&
         (!bound.has("alpha") || holds(bound("alpha"), 1.0));
}

// The scaled chain as libaccel::scaled_softmax takes it: a tensor scale and
// mask (not the Scalar overloads of mul and add), alpha 1, a softmax over the
// last dimension in float32.
bool is_scaled_softmax(const torch::jit::Match& match,
                       const std::unordered_map<std::string, torch::jit::Value*>& names) {
  const Bound bound{match, names};
  return bound.is_tensor("scale") && bound.is_tensor("additive") && holds(bound("alpha"), 1.0) &&
         bound.is_int("dim", -1) && bound.is_int("softmax_dtype", static_cast<int64_t>(at::kFloat));
}

std::size_t count_kind(const torch::jit::Graph& graph, c10::Symbol kind) {
  std::size_t count = 0;
  for (const torch::jit::Node* node : graph.nodes()) count += node->kind() == kind ? 1 : 0;
  return count;
}

std::size_t retarget_block(torch::jit::Block* block, const c10::Device& device) {
  std::size_t changed = 0;
  for (torch::jit::Node* node : block->nodes()) {
    for (torch::jit::Block* inner : node->blocks()) changed += retarget_block(inner, device);
    if (node->kind() != c10::prim::Constant || !node->hasAttribute(c10::attr::value)) continue;
    const c10::TypePtr& type = node->output()->type();
    if (type->kind() == c10::TypeKind::DeviceObjType) {
      if (c10::Device(node->s(c10::attr::value)) != device) {
        node->s_(c10::attr::value, device.str());
        ++changed;
      }
    } else if (node->kindOf(c10::attr::value) == torch::jit::AttributeKind::t) {
      const at::Tensor& value = node->t(c10::attr::value);
      if (value.dim() > 0 && value.device() != device) {
        node->t_(c10::attr::value, value.to(device));
        ++changed;
      }
    }
  }
  return changed;
}

// The ATen ops onednn_ops() swaps for libaccel's (matmul/matmul_ops.hpp, eltwise/gelu_op.hpp).
void collect_onednn_ops(torch::jit::Block* block, std::vector<torch::jit::Node*>& found) {
  static const c10::Symbol addmm = c10::Symbol::aten("addmm"), linear = c10::Symbol::aten("linear"),
                           matmul = c10::Symbol::aten("matmul"), gelu = c10::Symbol::aten("gelu");
  for (torch::jit::Node* node : block->nodes()) {
    for (torch::jit::Block* inner : node->blocks()) collect_onednn_ops(inner, found);
    const bool plain_addmm = node->kind() == addmm && node->inputs().size() == 5 && node->outputs().size() == 1 &&
                             holds(node->input(3), 1.0) && holds(node->input(4), 1.0);
    const bool plain_linear = node->kind() == linear && node->inputs().size() == 3 && node->outputs().size() == 1;
    const bool plain_matmul = node->kind() == matmul && node->inputs().size() == 2 && node->outputs().size() == 1;
    const bool plain_gelu = node->kind() == gelu && node->inputs().size() == 2 && node->outputs().size() == 1;
    if (plain_addmm || plain_linear || plain_matmul || plain_gelu) found.push_back(node);
  }
}

}  // namespace

std::size_t onednn_ops(torch::jit::Module& module) {
  std::size_t replaced = 0;
  for (const torch::jit::Module& submodule : module.modules()) {
    for (const torch::jit::Method& method : submodule.get_methods()) {
      std::shared_ptr<torch::jit::Graph> graph = method.graph();
      std::vector<torch::jit::Node*> found;
      collect_onednn_ops(graph->block(), found);
      for (torch::jit::Node* node : found) {
        const std::string op = node->kind().toUnqualString();
        // addmm's beta and alpha (both 1) are not libaccel::addmm's arguments.
        const std::size_t arity = op == "addmm" ? 3 : node->inputs().size();
        std::vector<torch::jit::Value*> inputs(node->inputs().begin(), node->inputs().begin() + arity);
        torch::jit::WithInsertPoint insert_before(node);
        torch::jit::Node* replacement = graph->create(c10::Symbol::fromQualString("libaccel::" + op), inputs, 1);
        // The traced type. Not setType: it is inline, and UBSan's vptr check
        // then needs a typeinfo LibTorch does not export.
        replacement->output()->copyMetadata(node->output());
        graph->insertNode(replacement);
        node->output()->replaceAllUsesWith(replacement->output());
        node->destroy();
        ++replaced;
      }
    }
  }
  return replaced;
}

std::size_t retarget_constants(torch::jit::Module& module, const c10::Device& device) {
  std::size_t changed = 0;
  for (const torch::jit::Module& submodule : module.modules()) {
    for (const torch::jit::Method& method : submodule.get_methods())
      changed += retarget_block(method.graph()->block(), device);
  }
  return changed;
}

std::size_t fuse_tanh_gelu(torch::jit::Module& module) {
  torch::jit::SubgraphRewriter rewriter;
  rewriter.RegisterRewritePattern(kTanhGeluChain, kTanhGelu);
  std::size_t replaced = 0;
  for (const torch::jit::Module& submodule : module.modules()) {
    for (const torch::jit::Method& method : submodule.get_methods()) {
      std::shared_ptr<torch::jit::Graph> graph = method.graph();
      const std::size_t before = count_kind(*graph, c10::Symbol::aten("gelu"));
      rewriter.runOnGraph(graph, is_tanh_gelu);
      replaced += count_kind(*graph, c10::Symbol::aten("gelu")) - before;
    }
  }
  return replaced;
}

std::size_t fuse_attention_softmax(torch::jit::Module& module) {
  torch::jit::SubgraphRewriter rewriter;
  rewriter.RegisterRewritePattern(kMaskedSoftmaxChain, kMaskedSoftmax);
  rewriter.RegisterRewritePattern(kCausalSoftmaxChain, kCausalSoftmax);
  torch::jit::SubgraphRewriter scaled;
  scaled.RegisterRewritePattern(kScaledSoftmaxChain, kScaledSoftmax);
  const c10::Symbol masked = c10::Symbol::fromQualString("libaccel::masked_softmax"),
                    fused_scaled = c10::Symbol::fromQualString("libaccel::scaled_softmax");
  std::size_t replaced = 0;
  for (const torch::jit::Module& submodule : module.modules()) {
    for (const torch::jit::Method& method : submodule.get_methods()) {
      std::shared_ptr<torch::jit::Graph> graph = method.graph();
      const std::size_t before = count_kind(*graph, masked) + count_kind(*graph, fused_scaled);
      rewriter.runOnGraph(graph, is_masked_softmax);
      scaled.runOnGraph(graph, is_scaled_softmax);
      replaced += count_kind(*graph, masked) + count_kind(*graph, fused_scaled) - before;
    }
  }
  return replaced;
}

}  // namespace accel::detail
