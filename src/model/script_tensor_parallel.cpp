#include "model/script_tensor_parallel.hpp"

#include <ATen/ATen.h>
#include <torch/csrc/jit/api/module.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/runtime/operator.h>

#include <functional>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "accel/error.hpp"
#include "model/script_calls.hpp"
#include "parallel/tp_plan.hpp"

namespace accel::detail {

namespace {

constexpr const char* kOperator = "accel::tp_linear";

// transformers' plans for GPT-2, BERT and Llama, by the class of the module holding
// the child: which child, and its style. A column-parallel output must reach
// its row-parallel partner through heads or features only (attention, an
// activation), as in these models.
struct PlannedChild {
  std::string parent_class;
  const char* child;
  TpStyle style;
};
constexpr struct {
  const char* parent_class;
  const char* child;
  TpStyle style;
} kPlan[] = {{"GPT2Attention", "c_attn", TpStyle::Colwise},
             {"GPT2Attention", "c_proj", TpStyle::Rowwise},
             {"GPT2MLP", "c_fc", TpStyle::Colwise},
             {"GPT2MLP", "c_proj", TpStyle::Rowwise},
             {"BertSelfAttention", "query", TpStyle::Colwise},
             {"BertSelfAttention", "key", TpStyle::Colwise},
             {"BertSelfAttention", "value", TpStyle::Colwise},
             {"BertSdpaSelfAttention", "query", TpStyle::Colwise},
             {"BertSdpaSelfAttention", "key", TpStyle::Colwise},
             {"BertSdpaSelfAttention", "value", TpStyle::Colwise},
             {"BertSelfOutput", "dense", TpStyle::Rowwise},
             {"BertIntermediate", "dense", TpStyle::Colwise},
             {"BertOutput", "dense", TpStyle::Rowwise}};
// Llama and the models that copy its modules under their own prefix
// (MistralAttention, Qwen2MLP...), whose plans in transformers
// (base_model_tp_plan) are Llama's. Qwen2's q, k and v biases are cut with
// their rows; Gemma's head_dim apart from hidden_size / heads changes nothing;
// OLMo's unparameterised norms, Granite's multipliers, Cohere's logit scale
// and StableLM's partial rotary embedding sit outside the split products.
constexpr const char* kLlamaFamily[] = {"Llama", "Mistral", "Qwen2", "Gemma", "Olmo", "Granite", "Cohere", "StableLm"};
constexpr struct {
  const char* parent_suffix;
  const char* child;
  TpStyle style;
} kLlamaPlan[] = {{"Attention", "q_proj", TpStyle::Colwise}, {"Attention", "k_proj", TpStyle::Colwise},
                  {"Attention", "v_proj", TpStyle::Colwise}, {"Attention", "o_proj", TpStyle::Rowwise},
                  {"MLP", "gate_proj", TpStyle::Colwise},    {"MLP", "up_proj", TpStyle::Colwise},
                  {"MLP", "down_proj", TpStyle::Rowwise}};

const std::vector<PlannedChild>& plan() {
  static const std::vector<PlannedChild> rows = [] {
    std::vector<PlannedChild> out;
    for (const auto& row : kPlan) out.push_back({row.parent_class, row.child, row.style});
    for (const char* family : kLlamaFamily) {
      for (const auto& row : kLlamaPlan) out.push_back({std::string(family) + row.parent_suffix, row.child, row.style});
    }
    return out;
  }();
  return rows;
}

// The config keys that count the heads (GPT-2's, BERT's, Llama's query and
// key/value heads). Under grouped-query attention each rank holds kv / tp
// key/value heads and the query heads that read them: the heads are cut in
// contiguous blocks, which keeps each group together, and the traced repeat
// of the key/value heads takes their count from the tensor (its repeat count,
// a constant, stays right).
constexpr const char* kHeadKeys[] = {"n_head", "num_attention_heads", "num_key_value_heads"};

struct Registered {
  const ModelImpl* owner = nullptr;
  TpStyle style = TpStyle::Colwise;
  bool conv1d = false;  // transformers' Conv1D: weight [in, out], not nn.Linear's [out, in]
  TensorParallelSlot slot;
};

std::mutex registry_mutex;
std::unordered_map<const c10::ivalue::Object*, Registered>& registry() {
  static auto* splits = new std::unordered_map<const c10::ivalue::Object*, Registered>();
  return *splits;
}

// x times the weight plus the bias, as the child computes it: Conv1D's
// addmm(bias, x.view(-1, in), weight).view(..., out), or nn.Linear's linear.
at::Tensor product(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias, bool conv1d) {
  if (!conv1d) return at::linear(x, weight, bias);
  std::vector<int64_t> shape = x.sizes().vec();
  shape.back() = weight.size(1);
  const at::Tensor rows = x.reshape({-1, x.size(-1)});
  return (bias.defined() ? at::addmm(bias, rows, weight) : at::mm(rows, weight)).view(shape);
}

at::Tensor tensor_attribute(const torch::jit::Module& module, const char* name) {
  if (!module.hasattr(name)) return at::Tensor();
  const c10::IValue value = module.attr(name);
  return value.isTensor() ? value.toTensor() : at::Tensor();
}

// The operator: the child's column- or row-parallel product when it is split,
// else its own forward.
void run_tp_linear(torch::jit::Stack& stack) {
  at::Tensor input = torch::jit::pop(stack).toTensor();
  c10::intrusive_ptr<c10::ivalue::Object> object = torch::jit::pop(stack).toObject();
  std::optional<Registered> found;
  {
    std::lock_guard<std::mutex> lock(registry_mutex);
    auto it = registry().find(object.get());
    if (it != registry().end()) found = it->second;
  }
  torch::jit::Module child(object);
  if (!found) {
    torch::jit::push(stack, child.forward({input}));
    return;
  }
  const at::Tensor weight = tensor_attribute(child, "weight"), bias = tensor_attribute(child, "bias");
  ProcessGroup& group = *found->slot.group;
  at::Tensor out;
  if (found->style == TpStyle::Colwise) {
    out = product(copy_to_tensor_parallel(input, group), weight, bias, found->conv1d);
  } else {  // the partial products summed over the group, then the whole bias once
    out = reduce_from_tensor_parallel(product(input, weight, at::Tensor(), found->conv1d), group);
    if (bias.defined()) out = out + bias;
  }
  torch::jit::push(stack, out);
}

void register_operator_once() {
  static std::once_flag once;
  std::call_once(once, [] {
    torch::jit::registerOperator(torch::jit::Operator(std::string(kOperator) + "(Any module, Tensor input) -> Tensor",
                                                      run_tp_linear, c10::AliasAnalysisKind::CONSERVATIVE));
  });
}

// aten::split(t, size, dim) nodes that cut `value` by a constant size.
std::vector<torch::jit::Node*> constant_splits_of(torch::jit::Value* value) {
  std::vector<torch::jit::Node*> out;
  for (const torch::jit::Use& use : value->uses()) {
    torch::jit::Node* user = use.user;
    if (user->kind() != c10::aten::split || use.offset != 0 || user->inputs().size() != 3) continue;
    if (torch::jit::toIValue(user->input(1)) && torch::jit::toIValue(user->input(1))->isInt()) out.push_back(user);
  }
  return out;
}

// How many equal blocks `parent` cuts its child `name`'s output of `width`
// features into (split(size) in its forward: GPT-2's q, k, v), else 1.
int64_t packed_blocks(const torch::jit::Module& parent, const std::string& name, int64_t width) {
  auto method = parent.find_method("forward");
  if (!method) return 1;
  int64_t blocks = 1;
  for (torch::jit::Node* node : method->graph()->nodes()) {
    if (node->kind() != c10::prim::CallMethod || node->input(0)->node()->kind() != c10::prim::GetAttr ||
        node->input(0)->node()->s(c10::attr::name) != name)
      continue;
    for (torch::jit::Node* split : constant_splits_of(node->output())) {
      const int64_t size = torch::jit::toIValue(split->input(1))->toInt();
      if (size > 0 && width % size == 0) blocks = width / size;
    }
  }
  return blocks;
}

// A view or reshape whose shape list counts a column-parallel output's
// features in constants (BERT's [b, l, heads, head_dim] of a projection, or
// the merged [b, l, width] of the heads' outputs): the count made to follow
// `local`, the width the output has at run time, where it was `width`. The
// first constant c of a list whose constants multiply to `width` becomes
// c * local / width; a list with one constant, `width`, takes `local`.
// Returns whether the view changed.
bool follow_width(torch::jit::Graph& graph, torch::jit::Node* view, const std::function<torch::jit::Value*()>& local,
                  int64_t width) {
  if (view->kind() != c10::aten::view && view->kind() != c10::aten::reshape) return false;
  torch::jit::Node* list = view->input(1)->node();
  if (list->kind() != c10::prim::ListConstruct) return false;
  std::vector<size_t> constants;
  int64_t product = 1;
  for (size_t i = 0; i < list->inputs().size(); ++i) {
    const std::optional<c10::IValue> value = torch::jit::toIValue(list->input(i));
    if (!value || !value->isInt() || value->toInt() == -1) continue;
    constants.push_back(i);
    product *= value->toInt();
  }
  if (constants.empty() || product != width) return false;
  torch::jit::WithInsertPoint point(view);
  std::vector<torch::jit::Value*> elements(list->inputs().begin(), list->inputs().end());
  torch::jit::Value*& first = elements[constants.front()];
  first = constants.size() == 1 ? local()
                                : graph.insert(c10::aten::floordiv, {graph.insert(c10::aten::mul, {local(), first}),
                                                                     graph.insertConstant(width)});
  torch::jit::Node* shape = graph.insertNode(graph.createList(c10::IntType::get(), elements));
  view->replaceInput(1, shape->output());
  return true;
}

// Every graph of every method of the module and its submodules, each once
// (a graph belongs to its class).
template <class Visit>
void for_each_graph(torch::jit::Module& module, Visit&& visit) {
  std::unordered_set<const torch::jit::Graph*> done;
  for (const auto& item : module.modules()) {
    for (const auto& method : item.get_methods()) {
      std::shared_ptr<torch::jit::Graph> graph = method.graph();
      if (done.insert(graph.get()).second) visit(item, method.name(), *graph);
    }
  }
}

void refuse_dropout(torch::jit::Block* block, const std::string& where, const TensorParallelSlot& slot) {
  for (torch::jit::Node* node : block->nodes()) {
    for (torch::jit::Block* inner : node->blocks()) refuse_dropout(inner, where, slot);
    const bool dropout = node->kind() == c10::aten::dropout || node->kind() == c10::aten::dropout_ ||
                         node->kind() == c10::aten::feature_dropout;
    if (!dropout || node->inputs().size() < 2) continue;
    const std::optional<c10::IValue> p = torch::jit::toIValue(node->input(1));
    require(p && p->isDouble() && p->toDouble() == 0.0, ErrorCode::Unsupported,
            "tp_size " + std::to_string(slot.size) + ": " + where + " applies dropout" +
                (p && p->isDouble() ? " " + std::to_string(p->toDouble()) : "") +
                ", which a traced TorchScript model draws on each rank apart; export it with dropout 0");
  }
}

// A split child as planned: where it is, its module and how it is cut.
struct Planned {
  std::string path;  // e.g. transformer.h.0.attn.c_attn
  torch::jit::Module module;
  TpStyle style;
  bool conv1d;
  TensorSplit weight_split, bias_split;
};

}  // namespace

ParameterSplits split_script_for_tensor_parallel(torch::jit::Module& module, const std::string& config_json,
                                                 const TensorParallelSlot& slot, const ModelImpl* owner) {
  const std::string tp = "tp_size " + std::to_string(slot.size);
  // 1. The plan's children, and everything about them checked.
  std::vector<Planned> planned;
  std::set<std::string> classes;
  std::map<const c10::ClassType*, int64_t> colwise_width;  // a column-parallel class's whole output width
  for (const auto& item : module.named_modules()) {
    classes.insert(type_name(item.value));
    for (const PlannedChild& entry : plan()) {
      if (type_name(item.value) != entry.parent_class) continue;
      const char* name = entry.child;
      const bool colwise = entry.style == TpStyle::Colwise;
      std::optional<torch::jit::Module> child;
      for (const auto& c : item.value.named_children()) {
        if (c.name == name) child = c.value;
      }
      const std::string path = item.name + "." + name;
      require(child.has_value(), ErrorCode::Unsupported,
              tp + ": " + item.name + " (" + entry.parent_class + ") has no submodule " + name + " to split");
      const std::string cls = type_name(*child);
      const at::Tensor weight = tensor_attribute(*child, "weight");
      require((cls == "Conv1D" || cls == "Linear") && weight.defined() && weight.dim() == 2, ErrorCode::Unsupported,
              tp + ": " + path + " is a " + cls + "; tensor parallelism splits Conv1D and Linear submodules");
      const bool conv1d = cls == "Conv1D";
      const int64_t out = conv1d ? weight.size(1) : weight.size(0), in = conv1d ? weight.size(0) : weight.size(1);
      Planned p{path, *child, colwise ? TpStyle::Colwise : TpStyle::Rowwise, conv1d, {}, {}};
      if (colwise) {
        // Packed outputs (GPT-2's q, k, v): the parent cuts them with split(size); each rank takes its part of each.
        const int64_t blocks = packed_blocks(item.value, name, out);
        require_arg(out % (blocks * slot.size) == 0, tp + ": " + path + " has " + std::to_string(out) +
                                                         " output features in " + std::to_string(blocks) +
                                                         " blocks; each block must divide by tp_size");
        p.weight_split = {conv1d ? 1 : 0, blocks};
        p.bias_split = {0, blocks};
        auto [known, fresh] = colwise_width.emplace(child->type().get(), out);
        require(fresh || known->second == out, ErrorCode::Unsupported,
                tp + ": " + path + " shares its class with a column-parallel submodule of another width");
      } else {
        require_arg(in % slot.size == 0,
                    tp + ": " + path + " has " + std::to_string(in) + " input features, which tp_size does not divide");
        p.weight_split = {conv1d ? 0 : 1, 1};
      }
      planned.push_back(std::move(p));
    }
  }
  if (planned.empty()) {
    std::string seen;
    for (const auto& cls : classes) seen += (seen.empty() ? "" : ", ") + cls;
    fail(ErrorCode::Unsupported, tp +
                                     ": tensor parallelism splits transformers' GPT-2, BERT, Llama, Mistral, "
                                     "Qwen2, Gemma, OLMo, Granite, Cohere and StableLM TorchScript models "
                                     "(GPT2Attention, GPT2MLP, BertSelfAttention, BertIntermediate, "
                                     "LlamaAttention, LlamaMLP and their twins in the Llama family) so far; "
                                     "this model's classes: " +
                                     seen);
  }
  if (!config_json.empty()) {
    const nlohmann::json config = nlohmann::json::parse(config_json, nullptr, false);
    for (const char* key : kHeadKeys) {
      if (!config.is_object() || !config.contains(key) || !config[key].is_number_integer()) continue;
      const int64_t heads = config[key].get<int64_t>();
      require_arg(heads % slot.size == 0, tp + " does not divide the model's " + key + " " + std::to_string(heads) +
                                              " (attention is split by heads)");
    }
  }
  std::set<const c10::ClassType*> types;
  for (const Planned& p : planned) types.insert(p.module.type().get());
  std::set<const c10::ClassType*> called;
  for_each_graph(
      module, [&](const torch::jit::Module& owner_module, const std::string& method, torch::jit::Graph& graph) {
        const std::string where = type_name(owner_module) + "." + method;
        refuse_dropout(graph.block(), where, slot);
        std::vector<torch::jit::Node*> calls;
        collect_forward_calls(graph.block(), types, calls);
        for (torch::jit::Node* call : calls) {
          require(call->inputs().size() == 2 && call->input(1)->type()->kind() == c10::TypeKind::TensorType &&
                      call->output()->type()->kind() == c10::TypeKind::TensorType,
                  ErrorCode::Unsupported,
                  tp + ": the call of " + class_of(call->input(0))->name()->name() + " in " + where +
                      " does not take one tensor and return one");
          called.insert(class_of(call->input(0)));
        }
      });
  for (const Planned& p : planned) {
    require(called.count(p.module.type().get()) > 0, ErrorCode::Unsupported,
            tp + ": " + p.path + " is not called as a method in the TorchScript graph (inlined at export?)");
  }

  // 2. The graphs: every call of a split class through the operator, and
  // constant cuts of a column-parallel output by a size that follows its width.
  register_operator_once();
  const c10::Symbol op = c10::Symbol::fromQualString(kOperator);
  for_each_graph(module, [&](const torch::jit::Module&, const std::string&, torch::jit::Graph& graph) {
    std::vector<torch::jit::Node*> calls;
    std::vector<std::pair<torch::jit::Value*, int64_t>> column_outputs;  // this graph's, with their whole width
    collect_forward_calls(graph.block(), types, calls);
    for (torch::jit::Node* call : calls) {
      torch::jit::Value* out = nullptr;
      {  // the insert point must not outlive the call it names, destroyed below
        torch::jit::WithInsertPoint point(call);
        out = graph.insert(op, {call->input(0), call->input(1)});
      }
      call->output()->replaceAllUsesWith(out);
      auto width = colwise_width.find(class_of(call->input(0)));
      call->destroy();
      if (width == colwise_width.end()) continue;
      for (torch::jit::Node* split : constant_splits_of(out)) {
        torch::jit::WithInsertPoint before(split);
        torch::jit::Value* now = graph.insert(c10::aten::size, {out, split->input(2)});
        torch::jit::Value* scaled = graph.insert(c10::aten::mul, {now, split->input(1)});
        split->replaceInput(1, graph.insert(c10::aten::floordiv, {scaled, graph.insertConstant(width->second)}));
      }
      auto last_dim = [&graph, out] { return graph.insert(c10::aten::size, {out, graph.insertConstant(-1)}); };
      std::vector<torch::jit::Node*> views;
      for (const torch::jit::Use& use : out->uses()) {
        if (use.offset == 0) views.push_back(use.user);
      }
      for (torch::jit::Node* view : views) follow_width(graph, view, last_dim, width->second);
      column_outputs.emplace_back(out, width->second);
    }
    // The heads merged back (BERT's context [b, l, width]): their width
    // follows this graph's first column-parallel output of the same width.
    for (torch::jit::Node* node : graph.nodes()) {
      if (node->inputs().empty()) continue;
      for (const auto& [out, width] : column_outputs) {
        if (node->input(0) == out || !out->node()->isBefore(node)) continue;
        auto last_dim = [&graph, out = out] { return graph.insert(c10::aten::size, {out, graph.insertConstant(-1)}); };
        // Only a single constant equal to the width: a merged view.
        torch::jit::Node* list = node->inputs().size() > 1 ? node->input(1)->node() : nullptr;
        if (list == nullptr || list->kind() != c10::prim::ListConstruct) continue;
        int64_t constant_count = 0;
        for (torch::jit::Value* element : list->inputs()) {
          const std::optional<c10::IValue> value = torch::jit::toIValue(element);
          if (value && value->isInt() && value->toInt() != -1) ++constant_count;
        }
        if (constant_count == 1 && follow_width(graph, node, last_dim, width)) break;
      }
    }
  });

  // 3. The parameters: this rank's slices, in place (the same tensors).
  ParameterSplits splits;
  std::lock_guard<std::mutex> lock(registry_mutex);
  for (Planned& p : planned) {
    at::NoGradGuard no_grad;
    at::Tensor weight = tensor_attribute(p.module, "weight"), bias = tensor_attribute(p.module, "bias");
    weight.set_data(shard_of(weight.detach(), p.weight_split, slot.size, slot.rank));
    splits.emplace_back(p.path + ".weight", p.weight_split);
    if (bias.defined() && p.style == TpStyle::Colwise) {
      bias.set_data(shard_of(bias.detach(), p.bias_split, slot.size, slot.rank));
      splits.emplace_back(p.path + ".bias", p.bias_split);
    }
    registry()[p.module._ivalue().get()] = Registered{owner, p.style, p.conv1d, slot};
  }
  return splits;
}

void unregister_script_splits(const ModelImpl* owner) {
  std::lock_guard<std::mutex> lock(registry_mutex);
  for (auto it = registry().begin(); it != registry().end();) {
    it = it->second.owner == owner ? registry().erase(it) : std::next(it);
  }
}

}  // namespace accel::detail
