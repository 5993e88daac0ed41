#include "optim/scheduler_state.hpp"

#include <ATen/core/Dict.h>
#include <ATen/core/List.h>

#include <cmath>
#include <map>
#include <utility>

#include "accel/error.hpp"

namespace accel::detail {

namespace {

using Dict = c10::impl::GenericDict;

// PyTorch ignores this key (load_state_dict only updates attributes); it tells
// the two warmup kinds, both LambdaLR in PyTorch, apart.
constexpr const char* kKindKey = "libaccel_scheduler";

const char* kind_label(SchedulerKind kind) {
  switch (kind) {
    case SchedulerKind::Step: return "step";
    case SchedulerKind::MultiStep: return "multi_step";
    case SchedulerKind::Exponential: return "exponential";
    case SchedulerKind::CosineAnnealing: return "cosine_annealing";
    case SchedulerKind::Linear: return "linear";
    case SchedulerKind::Constant: return "constant";
    case SchedulerKind::Polynomial: return "polynomial";
    case SchedulerKind::OneCycle: return "one_cycle";
    case SchedulerKind::LinearWarmup: return "linear_warmup";
    case SchedulerKind::CosineWarmup: return "cosine_warmup";
    case SchedulerKind::ReduceOnPlateau: return "reduce_on_plateau";
  }
  return "unknown";
}

c10::List<double> doubles(const std::vector<double>& values) {
  c10::List<double> out;
  for (double v : values) out.push_back(v);
  return out;
}

// The hyperparameters PyTorch keeps in the state dict, as (key, value) with
// PyTorch's names; read back, they must match this scheduler's options.
std::vector<std::pair<std::string, c10::IValue>> hyperparameters(const SchedulerOptions& o, size_t groups) {
  switch (o.kind) {
    case SchedulerKind::Step: return {{"step_size", o.step_size}, {"gamma", o.gamma}};
    case SchedulerKind::MultiStep: {
      // PyTorch's Counter of milestones; a plain dict, since a pickle of data names no class.
      std::map<int64_t, int64_t> counts;
      for (int64_t m : o.milestones) ++counts[m];
      c10::Dict<int64_t, int64_t> milestones;
      for (auto& [m, n] : counts) milestones.insert(m, n);
      return {{"milestones", milestones}, {"gamma", o.gamma}};
    }
    case SchedulerKind::Exponential: return {{"gamma", o.gamma}};
    case SchedulerKind::CosineAnnealing: return {{"T_max", o.t_max}, {"eta_min", o.eta_min}};
    case SchedulerKind::Linear:
      return {{"start_factor", o.start_factor}, {"end_factor", o.end_factor}, {"total_iters", o.total_iters}};
    case SchedulerKind::Constant: return {{"factor", o.factor}, {"total_iters", o.total_iters}};
    case SchedulerKind::Polynomial: return {{"total_iters", o.total_iters}, {"power", o.power}};
    case SchedulerKind::OneCycle: return {{"total_steps", o.total_steps}};
    case SchedulerKind::LinearWarmup:
    case SchedulerKind::CosineWarmup: return {};
    case SchedulerKind::ReduceOnPlateau:
      return {{"factor", o.factor},
              {"min_lrs", doubles(std::vector<double>(groups, o.min_lr))},
              {"patience", o.patience},
              {"cooldown", o.cooldown},
              {"mode", o.mode},
              {"threshold", o.threshold},
              {"threshold_mode", o.threshold_mode},
              {"eps", o.eps}};
  }
  return {};
}

// OneCycleLR's phases as PyTorch lists them (learning rates and momenta by
// the param-group key PyTorch reads them from).
c10::impl::GenericList one_cycle_phases(const SchedulerOptions& o) {
  struct Phase {
    c10::IValue end_step;
    const char *start_lr, *end_lr, *start_m, *end_m;
  };
  const double total = static_cast<double>(o.total_steps);
  const c10::IValue last(o.total_steps - 1);
  std::vector<Phase> phases;
  if (o.three_phase) {
    phases = {{o.pct_start * total - 1, "initial_lr", "max_lr", "max_momentum", "base_momentum"},
              {2 * o.pct_start * total - 2, "max_lr", "initial_lr", "base_momentum", "max_momentum"},
              {last, "initial_lr", "min_lr", "max_momentum", "max_momentum"}};
  } else {
    phases = {{o.pct_start * total - 1, "initial_lr", "max_lr", "max_momentum", "base_momentum"},
              {last, "max_lr", "min_lr", "base_momentum", "max_momentum"}};
  }
  c10::impl::GenericList out(c10::AnyType::get());
  for (const Phase& p : phases) {
    Dict d(c10::StringType::get(), c10::AnyType::get());
    d.insert("end_step", p.end_step);
    d.insert("start_lr", p.start_lr);
    d.insert("end_lr", p.end_lr);
    d.insert("start_momentum", p.start_m);
    d.insert("end_momentum", p.end_m);
    out.push_back(d);
  }
  return out;
}

std::string describe(const c10::IValue& v) {
  if (v.isInt()) return std::to_string(v.toInt());
  if (v.isDouble()) return c10::str(v.toDouble());
  if (v.isString()) return "\"" + v.toStringRef().substr(0, 40) + "\"";
  if (v.isBool()) return v.toBool() ? "True" : "False";
  return "a " + v.tagKind();
}

// Equal as PyTorch would compare them: numbers by value, containers element-wise.
bool same(const c10::IValue& a, const c10::IValue& b) {
  if ((a.isInt() || a.isDouble()) && (b.isInt() || b.isDouble()))
    return a.toScalar().toDouble() == b.toScalar().toDouble();
  if (a.isString() && b.isString()) return a.toStringRef() == b.toStringRef();
  if (a.isList() && b.isList()) {
    auto x = a.toListRef(), y = b.toListRef();
    if (x.size() != y.size()) return false;
    for (size_t i = 0; i < x.size(); ++i) {
      if (!same(x[i], y[i])) return false;
    }
    return true;
  }
  if (a.isGenericDict() && b.isGenericDict()) {
    auto x = a.toGenericDict(), y = b.toGenericDict();
    if (x.size() != y.size()) return false;
    for (const auto& e : x) {
      auto it = y.find(e.key());
      if (it == y.end() || !same(e.value(), it->value())) return false;
    }
    return true;
  }
  return false;
}

class Reader {
 public:
  Reader(const c10::IValue& value, std::string label) : label_(std::move(label)) {
    if (!value.isGenericDict())
      fail(ErrorCode::IO, label_ + ": the state dict is a " + value.tagKind() + ", not a dict");
    dict_ = value.toGenericDict();
    for (const auto& e : dict_) {
      if (!e.key().isString()) fail(ErrorCode::IO, label_ + ": the state dict has a key that is not a string");
    }
  }
  bool has(const std::string& key) const { return dict_.find(key) != dict_.end(); }
  const c10::IValue& field(const std::string& key) const {
    auto it = dict_.find(key);
    if (it == dict_.end()) fail(ErrorCode::IO, label_ + " lacks \"" + key + "\"");
    return it->value();
  }
  [[noreturn]] void bad(const std::string& key, const std::string& what) const {
    fail(ErrorCode::IO, label_ + ": \"" + key + "\" is " + describe(field(key)) + ", not " + what);
  }
  int64_t integer(const std::string& key) const {
    const c10::IValue& v = field(key);
    if (!v.isInt()) bad(key, "an integer");
    return v.toInt();
  }
  double number(const std::string& key) const {
    const c10::IValue& v = field(key);
    if (v.isDouble()) return v.toDouble();
    if (v.isInt()) return static_cast<double>(v.toInt());
    bad(key, "a number");
  }
  std::vector<double> numbers(const std::string& key, size_t groups) const {
    const c10::IValue& v = field(key);
    if (!v.isList()) bad(key, "a list of numbers");
    std::vector<double> out;
    for (const c10::IValue& e : v.toListRef()) {
      if (!e.isDouble() && !e.isInt()) bad(key, "a list of numbers");
      out.push_back(e.toScalar().toDouble());
    }
    if (out.size() != groups) {
      fail(ErrorCode::InvalidArgument, label_ + ": \"" + key + "\" holds " + std::to_string(out.size()) +
                                           " learning rates, the optimizer has " + std::to_string(groups) +
                                           " parameter groups");
    }
    return out;
  }
  const std::string& label() const { return label_; }

 private:
  std::string label_;
  Dict dict_{c10::StringType::get(), c10::AnyType::get()};
};

// The PyTorch class a state dict comes from, by the keys only that class has.
std::string saved_class(const Reader& r) {
  if (r.has("mode") && r.has("patience")) return "ReduceLROnPlateau";
  if (r.has("total_steps") && r.has("_schedule_phases")) return "OneCycleLR";
  if (r.has("lr_lambdas")) return "LambdaLR";
  if (r.has("milestones")) return "MultiStepLR";
  if (r.has("step_size")) return "StepLR";
  if (r.has("T_max")) return "CosineAnnealingLR";
  if (r.has("start_factor")) return "LinearLR";
  if (r.has("power")) return "PolynomialLR";
  if (r.has("factor") && r.has("total_iters")) return "ConstantLR";
  if (r.has("gamma")) return "ExponentialLR";
  return "";
}

}  // namespace

const char* torch_scheduler_class(SchedulerKind kind) {
  switch (kind) {
    case SchedulerKind::Step: return "StepLR";
    case SchedulerKind::MultiStep: return "MultiStepLR";
    case SchedulerKind::Exponential: return "ExponentialLR";
    case SchedulerKind::CosineAnnealing: return "CosineAnnealingLR";
    case SchedulerKind::Linear: return "LinearLR";
    case SchedulerKind::Constant: return "ConstantLR";
    case SchedulerKind::Polynomial: return "PolynomialLR";
    case SchedulerKind::OneCycle: return "OneCycleLR";
    case SchedulerKind::LinearWarmup:
    case SchedulerKind::CosineWarmup: return "LambdaLR";  // transformers' get_*_schedule_with_warmup
    case SchedulerKind::ReduceOnPlateau: return "ReduceLROnPlateau";
  }
  return "unknown";
}

c10::IValue scheduler_state_dict(const SchedulerOptions& o, const SchedulerPosition& p) {
  Dict d(c10::StringType::get(), c10::AnyType::get());
  for (auto& [key, value] : hyperparameters(o, p.lrs.size())) d.insert(key, value);
  if (o.kind == SchedulerKind::ReduceOnPlateau) {
    const double worse = o.mode == "min" ? INFINITY : -INFINITY;
    d.insert("verbose", false);
    d.insert("cooldown_counter", p.cooldown_counter);
    d.insert("best", p.best);
    d.insert("num_bad_epochs", p.bad_epochs);
    d.insert("mode_worse", worse);
  } else {
    if (o.kind == SchedulerKind::OneCycle) {
      d.insert("_schedule_phases", one_cycle_phases(o));
      // PyTorch 2.x's name for the annealing; 1.13's anneal_func is a bound
      // method (code), so it is left out and the reader's own stays.
      d.insert("_anneal_func_type", o.anneal_strategy);
      d.insert("cycle_momentum", false);  // libaccel's OneCycle leaves momentum alone
      d.insert("use_beta1", false);
    }
    d.insert("base_lrs", doubles(p.base_lrs));
    d.insert("verbose", false);
    // What Accelerate's cap on OneCycle reads: PyTorch's count (1 after
    // construction) plus the micro-steps adjust_scheduler adds.
    d.insert("_step_count", p.last_epoch + 1 + p.adjusted_steps);
    d.insert("_get_lr_called_within_step", false);
  }
  d.insert("last_epoch", p.last_epoch);
  d.insert("_last_lr", doubles(p.lrs));
  if (o.kind == SchedulerKind::LinearWarmup || o.kind == SchedulerKind::CosineWarmup) {
    // LambdaLR saves None for lambdas that are plain functions.
    c10::impl::GenericList lambdas(c10::NoneType::get());
    for (size_t i = 0; i < p.lrs.size(); ++i) lambdas.push_back(c10::IValue());
    d.insert("lr_lambdas", lambdas);
  }
  d.insert(kKindKey, kind_label(o.kind));
  return d;
}

SchedulerPosition read_scheduler_state_dict(const SchedulerOptions& o, const c10::IValue& value, size_t groups,
                                            const std::string& label) {
  const Reader r(value, label);
  const std::string want = torch_scheduler_class(o.kind);
  if (r.has(kKindKey)) {
    const c10::IValue& kind = r.field(kKindKey);
    if (!kind.isString()) r.bad(kKindKey, "a scheduler kind");
    require_arg(kind.toStringRef() == kind_label(o.kind),
                label + ": saved by a " + kind.toStringRef() + " scheduler, this one is " + kind_label(o.kind));
  } else {
    const std::string saved = saved_class(r);
    require_arg(saved == want, label + ": the state of " + (saved.empty() ? "an unknown scheduler class" : saved) +
                                   ", this scheduler is " + want + " (" + kind_label(o.kind) + ")");
  }
  for (auto& [key, expected] : hyperparameters(o, groups)) {
    const c10::IValue& saved = r.field(key);
    require_arg(same(saved, expected),
                label + ": \"" + key + "\" is " + describe(saved) + ", this scheduler's is " + describe(expected));
  }
  if (o.kind == SchedulerKind::OneCycle) {
    const c10::IValue& phases = r.field("_schedule_phases");
    if (!phases.isList()) r.bad("_schedule_phases", "a list");
    require_arg(same(phases, one_cycle_phases(o)),
                label + ": \"_schedule_phases\" differs from this scheduler's (pct_start " + c10::str(o.pct_start) +
                    (o.three_phase ? ", three phases)" : ", two phases)"));
    if (r.has("_anneal_func_type")) {
      require_arg(same(r.field("_anneal_func_type"), o.anneal_strategy),
                  label + ": \"_anneal_func_type\" is " + describe(r.field("_anneal_func_type")) +
                      ", this scheduler's is \"" + o.anneal_strategy + "\"");
    }
  }
  SchedulerPosition p;
  p.last_epoch = r.integer("last_epoch");
  if (p.last_epoch < 0) r.bad("last_epoch", "a step count >= 0");
  p.lrs = r.numbers("_last_lr", groups);
  if (o.kind == SchedulerKind::ReduceOnPlateau) {
    p.best = r.number("best");
    p.bad_epochs = r.integer("num_bad_epochs");
    p.cooldown_counter = r.integer("cooldown_counter");
    if (p.bad_epochs < 0) r.bad("num_bad_epochs", "a count >= 0");
    if (p.cooldown_counter < 0) r.bad("cooldown_counter", "a count >= 0");
  } else {
    p.base_lrs = r.numbers("base_lrs", groups);
    p.adjusted_steps = r.integer("_step_count") - 1 - p.last_epoch;
    if (p.adjusted_steps < 0) r.bad("_step_count", "at least last_epoch + 1 = " + std::to_string(p.last_epoch + 1));
  }
  return p;
}

bool is_pickle(const std::string& bytes) {
  // torch.save's and pickle_save's zip container, or a bare pickle (protocol 2+).
  return bytes.rfind("PK\x03\x04", 0) == 0 || (!bytes.empty() && static_cast<unsigned char>(bytes[0]) == 0x80);
}

}  // namespace accel::detail
