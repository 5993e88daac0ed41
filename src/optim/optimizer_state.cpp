#include "optim/optimizer_state.hpp"

#include <ATen/ATen.h>
#include <torch/optim/adagrad.h>
#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/optim/rmsprop.h>
#include <torch/optim/sgd.h>

#include <functional>
#include <map>
#include <memory>
#include <set>

#include "accel/error.hpp"
#include "core/file_io.hpp"
#include "formats/torch_pickle.hpp"
#include "optim/state_key.hpp"

namespace accel::detail {

namespace {

using Dict = c10::impl::GenericDict;

Dict string_dict() { return Dict(c10::StringType::get(), c10::AnyType::get()); }

c10::IValue step_value(int64_t step) { return at::scalar_tensor(static_cast<double>(step), at::kFloat); }

// Reads one state dict of one kind, naming the file and key in every error.
class Reader {
 public:
  Reader(std::string label) : label_(std::move(label)) {}

  [[noreturn]] void bad(const std::string& key, const std::string& what) const {
    fail(ErrorCode::IO, label_ + ": " + key + " " + what);
  }
  static std::string kind(const c10::IValue& v) { return v.tagKind(); }

  const c10::IValue& field(const Dict& dict, const std::string& key, const std::string& where) const {
    auto it = dict.find(key);
    if (it == dict.end()) bad(where, "lacks \"" + key + "\"");
    return it->value();
  }
  Dict dict(const c10::IValue& v, const std::string& where) const {
    if (!v.isGenericDict()) bad(where, "is a " + kind(v) + ", not a dict");
    return v.toGenericDict();
  }
  double number(const Dict& group, const std::string& key, const std::string& where) const {
    const c10::IValue& v = field(group, key, where);
    if (v.isDouble()) return v.toDouble();
    if (v.isInt()) return static_cast<double>(v.toInt());
    bad(where + "[\"" + key + "\"]", "is a " + kind(v) + ", not a number");
  }
  bool boolean(const Dict& group, const std::string& key, const std::string& where, bool fallback) const {
    auto it = group.find(key);
    if (it == group.end() || it->value().isNone()) return fallback;
    if (!it->value().isBool()) bad(where + "[\"" + key + "\"]", "is a " + kind(it->value()) + ", not a bool");
    return it->value().toBool();
  }
  int64_t step(const Dict& state, const std::string& where) const {
    const c10::IValue& v = field(state, "step", where);
    double value = 0;
    if (v.isInt()) {
      value = static_cast<double>(v.toInt());
    } else if (v.isDouble()) {
      value = v.toDouble();
    } else if (v.isTensor() && v.toTensor().numel() == 1) {
      value = v.toTensor().item<double>();
    } else {
      bad(where + "[\"step\"]", "is a " + kind(v) + ", not a step count");
    }
    if (!(value >= 0) || value != static_cast<double>(static_cast<int64_t>(value))) {
      bad(where + "[\"step\"]", "is " + std::to_string(value) + ", not a non-negative whole number");
    }
    return static_cast<int64_t>(value);
  }
  // A state tensor shaped like param, as param's dtype and device; undefined when absent and optional.
  at::Tensor tensor(const Dict& state, const std::string& key, const std::string& where, const at::Tensor& param,
                    bool optional) const {
    auto it = state.find(key);
    if (it == state.end() || it->value().isNone()) {
      if (!optional) bad(where, "lacks \"" + key + "\"");
      return {};
    }
    const c10::IValue& v = it->value();
    if (!v.isTensor()) bad(where + "[\"" + key + "\"]", "is a " + kind(v) + ", not a tensor");
    const at::Tensor& t = v.toTensor();
    if (!at::isFloatingType(t.scalar_type())) {
      bad(where + "[\"" + key + "\"]",
          std::string("has dtype ") + c10::toString(t.scalar_type()) + ", not a floating type");
    }
    if (t.sizes() != param.sizes()) {
      fail(ErrorCode::InvalidArgument, label_ + ": " + where + "[\"" + key + "\"] has shape " + c10::str(t.sizes()) +
                                           ", its parameter has " + c10::str(param.sizes()));
    }
    return t.to(param.options(), /*non_blocking=*/false, /*copy=*/true).contiguous();
  }

 private:
  std::string label_;
};

template <class State>
const State* state_as(const torch::optim::OptimizerParamState& state) {
  return dynamic_cast<const State*>(&state);
}

Dict param_state(OptimizerKind kind, const torch::optim::OptimizerParamState& base) {
  Dict out = string_dict();
  auto put = [&](const char* key, const at::Tensor& t) {
    if (t.defined()) out.insert(key, t.detach().cpu());
  };
  switch (kind) {
    case OptimizerKind::Sgd: {
      const auto& s = *state_as<torch::optim::SGDParamState>(base);
      out.insert("momentum_buffer",
                 s.momentum_buffer().defined() ? c10::IValue(s.momentum_buffer().detach().cpu()) : c10::IValue());
      break;
    }
    case OptimizerKind::Adam:
    case OptimizerKind::AdamW: {
      // AdamW's state type shares no base with Adam's, only its fields' names.
      auto put_adam = [&](const auto& s) {
        out.insert("step", step_value(s.step()));
        put("exp_avg", s.exp_avg());
        put("exp_avg_sq", s.exp_avg_sq());
        put("max_exp_avg_sq", s.max_exp_avg_sq());
      };
      if (kind == OptimizerKind::Adam) {
        put_adam(*state_as<torch::optim::AdamParamState>(base));
      } else {
        put_adam(*state_as<torch::optim::AdamWParamState>(base));
      }
      break;
    }
    case OptimizerKind::RmsProp: {
      const auto& s = *state_as<torch::optim::RMSpropParamState>(base);
      out.insert("step", step_value(s.step()));
      put("square_avg", s.square_avg());
      put("momentum_buffer", s.momentum_buffer());
      put("grad_avg", s.grad_avg());
      break;
    }
    case OptimizerKind::Adagrad: {
      const auto& s = *state_as<torch::optim::AdagradParamState>(base);
      out.insert("step", step_value(s.step()));
      put("sum", s.sum());
      break;
    }
  }
  return out;
}

// PyTorch's hyperparameter names per optimizer (those it adds that LibTorch
// has no use for carry PyTorch's defaults, so Python reads a complete group).
Dict group_options(OptimizerKind kind, const torch::optim::OptimizerOptions& base) {
  Dict g = string_dict();
  g.insert("lr", base.get_lr());
  g.insert("maximize", false);
  g.insert("foreach", c10::IValue());
  g.insert("differentiable", false);
  switch (kind) {
    case OptimizerKind::Sgd: {
      const auto& o = static_cast<const torch::optim::SGDOptions&>(base);
      g.insert("momentum", o.momentum());
      g.insert("dampening", o.dampening());
      g.insert("weight_decay", o.weight_decay());
      g.insert("nesterov", o.nesterov());
      break;
    }
    case OptimizerKind::Adam:
    case OptimizerKind::AdamW: {
      auto put = [&](const auto& o) {
        g.insert("betas", c10::ivalue::Tuple::create({std::get<0>(o.betas()), std::get<1>(o.betas())}));
        g.insert("eps", o.eps());
        g.insert("weight_decay", o.weight_decay());
        g.insert("amsgrad", o.amsgrad());
        g.insert("capturable", false);
      };
      if (kind == OptimizerKind::Adam) {
        put(static_cast<const torch::optim::AdamOptions&>(base));
        g.insert("fused", false);
      } else {
        put(static_cast<const torch::optim::AdamWOptions&>(base));
      }
      break;
    }
    case OptimizerKind::RmsProp: {
      const auto& o = static_cast<const torch::optim::RMSpropOptions&>(base);
      g.insert("alpha", o.alpha());
      g.insert("eps", o.eps());
      g.insert("weight_decay", o.weight_decay());
      g.insert("momentum", o.momentum());
      g.insert("centered", o.centered());
      break;
    }
    case OptimizerKind::Adagrad: {
      const auto& o = static_cast<const torch::optim::AdagradOptions&>(base);
      g.insert("lr_decay", o.lr_decay());
      g.insert("weight_decay", o.weight_decay());
      g.insert("initial_accumulator_value", o.initial_accumulator_value());
      g.insert("eps", o.eps());
      break;
    }
  }
  return g;
}

template <class State>
std::unique_ptr<State> read_adam_state(const Reader& r, const Dict& s, const std::string& where, const at::Tensor& p) {
  auto state = std::make_unique<State>();
  state->step(r.step(s, where));
  state->exp_avg(r.tensor(s, "exp_avg", where, p, false));
  state->exp_avg_sq(r.tensor(s, "exp_avg_sq", where, p, false));
  state->max_exp_avg_sq(r.tensor(s, "max_exp_avg_sq", where, p, true));
  return state;
}

std::unique_ptr<torch::optim::OptimizerParamState> read_param_state(OptimizerKind kind, const Reader& r, const Dict& s,
                                                                    const std::string& where, const at::Tensor& p) {
  switch (kind) {
    case OptimizerKind::Sgd: {
      auto state = std::make_unique<torch::optim::SGDParamState>();
      at::Tensor buffer = r.tensor(s, "momentum_buffer", where, p, true);
      if (buffer.defined()) state->momentum_buffer(buffer);
      return state;
    }
    case OptimizerKind::Adam: return read_adam_state<torch::optim::AdamParamState>(r, s, where, p);
    case OptimizerKind::AdamW: return read_adam_state<torch::optim::AdamWParamState>(r, s, where, p);
    case OptimizerKind::RmsProp: {
      auto state = std::make_unique<torch::optim::RMSpropParamState>();
      state->step(r.step(s, where));
      state->square_avg(r.tensor(s, "square_avg", where, p, false));
      state->momentum_buffer(r.tensor(s, "momentum_buffer", where, p, true));
      state->grad_avg(r.tensor(s, "grad_avg", where, p, true));
      return state;
    }
    case OptimizerKind::Adagrad: {
      auto state = std::make_unique<torch::optim::AdagradParamState>();
      state->step(r.step(s, where));
      state->sum(r.tensor(s, "sum", where, p, false));
      return state;
    }
  }
  fail(ErrorCode::InvalidArgument, "unknown optimizer kind");
}

// Applies a group's hyperparameters after reading them all.
void read_group_options(OptimizerKind kind, const Reader& r, const Dict& g, const std::string& where,
                        torch::optim::OptimizerOptions& base, std::vector<std::function<void()>>& apply) {
  if (r.boolean(g, "maximize", where, false)) {
    fail(ErrorCode::Unsupported, where + ": maximize=True is not supported by libaccel's optimizers");
  }
  const double lr = r.number(g, "lr", where);
  apply.push_back([&base, lr] { base.set_lr(lr); });
  switch (kind) {
    case OptimizerKind::Sgd: {
      auto& o = static_cast<torch::optim::SGDOptions&>(base);
      double momentum = r.number(g, "momentum", where), dampening = r.number(g, "dampening", where),
             weight_decay = r.number(g, "weight_decay", where);
      bool nesterov = r.boolean(g, "nesterov", where, false);
      apply.push_back([&o, momentum, dampening, weight_decay, nesterov] {
        o.momentum(momentum).dampening(dampening).weight_decay(weight_decay).nesterov(nesterov);
      });
      break;
    }
    case OptimizerKind::Adam:
    case OptimizerKind::AdamW: {
      const c10::IValue& betas = r.field(g, "betas", where);
      std::vector<c10::IValue> pair;
      if (betas.isTuple()) pair = betas.toTupleRef().elements().vec();
      if (betas.isList()) pair = betas.toListRef().vec();
      if (pair.size() != 2 || !pair[0].isDouble() || !pair[1].isDouble()) {
        r.bad(where + "[\"betas\"]", "is not a pair of numbers");
      }
      const std::tuple<double, double> b{pair[0].toDouble(), pair[1].toDouble()};
      double eps = r.number(g, "eps", where), weight_decay = r.number(g, "weight_decay", where);
      bool amsgrad = r.boolean(g, "amsgrad", where, false);
      if (kind == OptimizerKind::Adam) {
        auto& o = static_cast<torch::optim::AdamOptions&>(base);
        apply.push_back(
            [&o, b, eps, weight_decay, amsgrad] { o.betas(b).eps(eps).weight_decay(weight_decay).amsgrad(amsgrad); });
      } else {
        auto& o = static_cast<torch::optim::AdamWOptions&>(base);
        apply.push_back(
            [&o, b, eps, weight_decay, amsgrad] { o.betas(b).eps(eps).weight_decay(weight_decay).amsgrad(amsgrad); });
      }
      break;
    }
    case OptimizerKind::RmsProp: {
      auto& o = static_cast<torch::optim::RMSpropOptions&>(base);
      double alpha = r.number(g, "alpha", where), eps = r.number(g, "eps", where),
             weight_decay = r.number(g, "weight_decay", where), momentum = r.number(g, "momentum", where);
      bool centered = r.boolean(g, "centered", where, false);
      apply.push_back([&o, alpha, eps, weight_decay, momentum, centered] {
        o.alpha(alpha).eps(eps).weight_decay(weight_decay).momentum(momentum).centered(centered);
      });
      break;
    }
    case OptimizerKind::Adagrad: {
      auto& o = static_cast<torch::optim::AdagradOptions&>(base);
      double lr_decay = r.number(g, "lr_decay", where), weight_decay = r.number(g, "weight_decay", where),
             initial = r.number(g, "initial_accumulator_value", where), eps = r.number(g, "eps", where);
      apply.push_back([&o, lr_decay, weight_decay, initial, eps] {
        o.lr_decay(lr_decay).weight_decay(weight_decay).initial_accumulator_value(initial).eps(eps);
      });
      break;
    }
  }
}

}  // namespace

c10::IValue optimizer_state_dict(torch::optim::Optimizer& optimizer, OptimizerKind kind,
                                 const Optimizer::GroupEntries& extra_group_entries) {
  Dict state(c10::IntType::get(), c10::AnyType::get());
  c10::impl::GenericList groups(c10::AnyType::get());
  int64_t index = 0;
  for (auto& group : optimizer.param_groups()) {
    c10::List<int64_t> params;
    for (const at::Tensor& p : group.params()) {
      auto it = optimizer.state().find(optimizer_state_key(p));
      if (it != optimizer.state().end()) state.insert(index, param_state(kind, *it->second));
      params.push_back(index++);
    }
    Dict g = group_options(kind, group.options());
    const size_t group_index = static_cast<size_t>(groups.size());
    if (group_index < extra_group_entries.size()) {
      for (const auto& [key, value] : extra_group_entries[group_index]) g.insert_or_assign(key, value);
    }
    g.insert("params", params);
    groups.push_back(g);
  }
  Dict out = string_dict();
  out.insert("state", state);
  out.insert("param_groups", groups);
  return out;
}

void load_optimizer_state_dict(torch::optim::Optimizer& optimizer, OptimizerKind kind, const c10::IValue& value,
                               const std::string& label) {
  const Reader r(label);
  const Dict top = r.dict(value, "the state dict");
  const Dict saved_state = r.dict(r.field(top, "state", "the state dict"), "\"state\"");
  const c10::IValue& groups_value = r.field(top, "param_groups", "the state dict");
  if (!groups_value.isList()) r.bad("\"param_groups\"", "is a " + Reader::kind(groups_value) + ", not a list");
  const auto saved_groups = groups_value.toListRef();
  auto& groups = optimizer.param_groups();
  if (saved_groups.size() != groups.size()) {
    fail(ErrorCode::InvalidArgument, label + ": " + std::to_string(saved_groups.size()) +
                                         " parameter groups saved, the optimizer has " + std::to_string(groups.size()));
  }
  // Parameter index -> the optimizer's parameter, as the saved groups number them.
  std::map<int64_t, at::Tensor> params;
  std::vector<std::function<void()>> apply;
  for (size_t g = 0; g < groups.size(); ++g) {
    const std::string where = "param_groups[" + std::to_string(g) + "]";
    const Dict group = r.dict(saved_groups[g], where);
    const c10::IValue& indices = r.field(group, "params", where);
    if (!indices.isList()) r.bad(where + "[\"params\"]", "is not a list");
    const auto list = indices.toListRef();
    if (list.size() != groups[g].params().size()) {
      fail(ErrorCode::InvalidArgument, label + ": " + where + " holds " + std::to_string(list.size()) +
                                           " parameters, the optimizer's group has " +
                                           std::to_string(groups[g].params().size()));
    }
    for (size_t i = 0; i < list.size(); ++i) {
      if (!list[i].isInt()) r.bad(where + "[\"params\"]", "holds a " + Reader::kind(list[i]) + ", not an index");
      if (!params.emplace(list[i].toInt(), groups[g].params()[i]).second) {
        r.bad(where + "[\"params\"]", "repeats parameter index " + std::to_string(list[i].toInt()));
      }
    }
    read_group_options(kind, r, group, where, groups[g].options(), apply);
  }
  std::vector<std::pair<at::Tensor, std::unique_ptr<torch::optim::OptimizerParamState>>> states;
  for (const auto& entry : saved_state) {
    if (!entry.key().isInt()) r.bad("\"state\"", "has a key of type " + Reader::kind(entry.key()) + ", not an index");
    const int64_t index = entry.key().toInt();
    const std::string where = "state[" + std::to_string(index) + "]";
    auto it = params.find(index);
    if (it == params.end()) r.bad(where, "is for a parameter index no group lists");
    states.emplace_back(it->second, read_param_state(kind, r, r.dict(entry.value(), where), where, it->second));
  }
  // Everything checked: apply.
  for (auto& [index, param] : params) optimizer.state().erase(optimizer_state_key(param));
  for (auto& [param, state] : states) optimizer.state()[optimizer_state_key(param)] = std::move(state);
  for (auto& step : apply) step();
}

std::string pickle_state_dict(const c10::IValue& state_dict) {
  StringSink sink;
  write_torch_save(sink, state_dict);
  return std::move(sink.bytes);
}

c10::IValue unpickle_state_dict(const std::string& bytes, const std::string& label, PickleVocabulary vocabulary) {
  // Only libaccel's own reader sees these bytes, never LibTorch's unpickler:
  // LibTorch 1.13's is not hardened against malformed pickles (a REDUCE on an
  // empty stack, a BINPERSID with nothing to load, a TUPLE2 of one item crash
  // the process), and it allocates whatever length a string declares. The
  // reader reads what torch::pickle_save writes (libaccel's own files) and
  // what Python's torch.save writes (Accelerate's), data only.
  if (!is_zip_archive(bytes)) {
    fail(ErrorCode::IO, label +
                            ": not a PyTorch pickle of plain data (not a torch.save zip archive; the format "
                            "of torch.save before PyTorch 1.6 is not read)");
  }
  return read_torch_save(bytes, label, vocabulary);
}

bool is_legacy_optimizer_archive(const std::string& bytes) {
  // A TorchScript module archive carries its class's code; a state-dict pickle has none.
  return bytes.find("/code/__torch__") != std::string::npos;
}

}  // namespace accel::detail
