#include "accel/scheduler.hpp"

#include <torch/optim/optimizer.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "accel/data.hpp"
#include "accel/error.hpp"
#include "core/json.hpp"
#include "optim/optimizer_state.hpp"
#include "optim/scheduler_state.hpp"

namespace accel {

namespace {

constexpr double kPi = 3.14159265358979323846;

void check_positive(int64_t value, const char* name) {
  require_arg(value > 0, std::string("scheduler: ") + name + " must be positive, got " + std::to_string(value));
}

void check_range(double value, double lo, double hi, const char* name) {
  require_arg(std::isfinite(value) && value >= lo && value <= hi, std::string("scheduler: ") + name + " must be in [" +
                                                                      std::to_string(lo) + ", " + std::to_string(hi) +
                                                                      "], got " + std::to_string(value));
}

void validate(const SchedulerOptions& o) {
  switch (o.kind) {
    case SchedulerKind::Step: check_positive(o.step_size, "step_size"); break;
    case SchedulerKind::MultiStep:
      require_arg(std::is_sorted(o.milestones.begin(), o.milestones.end()), "scheduler: milestones must be increasing");
      break;
    case SchedulerKind::Exponential: break;
    case SchedulerKind::CosineAnnealing: check_positive(o.t_max, "t_max"); break;
    case SchedulerKind::Linear:
      check_range(o.start_factor, 1e-12, 1.0, "start_factor");
      check_range(o.end_factor, 0.0, 1.0, "end_factor");
      check_positive(o.total_iters, "total_iters");
      break;
    case SchedulerKind::Constant:
      check_range(o.factor, 0.0, 1.0, "factor");
      require_arg(o.total_iters >= 0, "scheduler: total_iters must be >= 0, got " + std::to_string(o.total_iters));
      break;
    case SchedulerKind::Polynomial: check_positive(o.total_iters, "total_iters"); break;
    case SchedulerKind::OneCycle:
      check_positive(o.total_steps, "total_steps");
      check_range(o.pct_start, 0.0, 1.0, "pct_start");
      require_arg(o.anneal_strategy == "cos" || o.anneal_strategy == "linear",
                  "scheduler: anneal_strategy must be \"cos\" or \"linear\", got \"" + o.anneal_strategy + "\"");
      require_arg(o.max_lr > 0 && o.div_factor > 0 && o.final_div_factor > 0,
                  "scheduler: max_lr, div_factor and final_div_factor must be positive");
      break;
    case SchedulerKind::LinearWarmup:
    case SchedulerKind::CosineWarmup:
      require_arg(o.num_warmup_steps >= 0,
                  "scheduler: num_warmup_steps must be >= 0, got " + std::to_string(o.num_warmup_steps));
      check_positive(o.num_training_steps, "num_training_steps");
      break;
    case SchedulerKind::ReduceOnPlateau:
      require_arg(o.mode == "min" || o.mode == "max",
                  "scheduler: mode must be \"min\" or \"max\", got \"" + o.mode + "\"");
      require_arg(o.threshold_mode == "rel" || o.threshold_mode == "abs",
                  "scheduler: threshold_mode must be \"rel\" or \"abs\", got \"" + o.threshold_mode + "\"");
      require_arg(o.factor < 1.0 && o.factor >= 0,
                  "scheduler: factor must be in [0, 1), got " + std::to_string(o.factor));
      require_arg(o.patience >= 0, "scheduler: patience must be >= 0");
      break;
    default: fail(ErrorCode::InvalidArgument, "scheduler: unknown kind " + std::to_string(static_cast<int>(o.kind)));
  }
}

double anneal(double start, double end, double pct, bool cosine) {
  return cosine ? end + (start - end) / 2.0 * (std::cos(kPi * pct) + 1.0) : (end - start) * pct + start;
}

}  // namespace

SchedulerOptions SchedulerOptions::defaults(SchedulerKind kind) {
  SchedulerOptions o;
  o.kind = kind;
  if (kind == SchedulerKind::ReduceOnPlateau) o.factor = 0.1;
  return o;
}

struct Scheduler::Impl {
  Optimizer* optimizer;
  SchedulerOptions options;
  std::vector<double> base_lrs;
  int64_t last_epoch = 0;
  // ReduceOnPlateau state
  double best = 0;
  int64_t bad_epochs = 0;
  int64_t cooldown_counter = 0;
  // Set by prepare
  std::shared_ptr<GradientState> gradient_state;
  int num_processes = 1;
  bool split_batches = false;                    // batches are not multiplied by processes: one step per optimizer step
  bool adjust_scheduler = false;                 // micro-steps count towards OneCycle's total_steps
  bool accelerator_steps_with_optimizer = true;  // the accelerator's step_scheduler_with_optimizer
  // Calls skipped on accumulation micro-steps under adjust_scheduler; like
  // PyTorch's _step_count that Accelerate bumps, they bring OneCycle's cap closer.
  int64_t adjusted_steps = 0;
  std::shared_ptr<int> alive = std::make_shared<int>(0);

  std::vector<torch::optim::OptimizerParamGroup>& groups() { return optimizer->torch_optimizer().param_groups(); }

  // What PyTorch's scheduler of this kind adds to each param group, for the
  // optimizer's state_dict: LRScheduler's initial_lr (the base lr), and
  // OneCycleLR's max_lr and min_lr. ReduceLROnPlateau adds nothing.
  void publish_group_entries() {
    Optimizer::GroupEntries entries;
    if (options.kind != SchedulerKind::ReduceOnPlateau) {
      for (double base : base_lrs) {
        std::vector<std::pair<std::string, double>> group{{"initial_lr", base}};
        if (options.kind == SchedulerKind::OneCycle) {
          group.emplace_back("max_lr", options.max_lr);
          group.emplace_back("min_lr", base / options.final_div_factor);
        }
        entries.push_back(std::move(group));
      }
    }
    optimizer->set_scheduler_group_entries(std::move(entries));
  }

  detail::SchedulerPosition position() {
    detail::SchedulerPosition p{last_epoch, base_lrs, {}, best, bad_epochs, cooldown_counter, adjusted_steps};
    for (auto& group : groups()) p.lrs.push_back(group.options().get_lr());
    return p;
  }
  // p was checked against this scheduler (group count included): cannot fail.
  void restore(const detail::SchedulerPosition& p) {
    last_epoch = p.last_epoch;
    if (!p.base_lrs.empty()) base_lrs = p.base_lrs;  // ReduceLROnPlateau's state has none
    publish_group_entries();
    if (options.kind == SchedulerKind::ReduceOnPlateau) {  // the others' states carry no counters
      best = p.best;
      bad_epochs = p.bad_epochs;
      cooldown_counter = p.cooldown_counter;
    }
    adjusted_steps = p.adjusted_steps;
    auto& g = groups();
    for (size_t i = 0; i < g.size(); ++i) g[i].options().set_lr(p.lrs[i]);
  }

  double lr_at(double base, int64_t t) const {
    const SchedulerOptions& o = options;
    switch (o.kind) {
      case SchedulerKind::Step: return base * std::pow(o.gamma, static_cast<double>(t / o.step_size));
      case SchedulerKind::MultiStep: {
        auto passed = std::upper_bound(o.milestones.begin(), o.milestones.end(), t) - o.milestones.begin();
        return base * std::pow(o.gamma, static_cast<double>(passed));
      }
      case SchedulerKind::Exponential: return base * std::pow(o.gamma, static_cast<double>(t));
      case SchedulerKind::CosineAnnealing:
        return o.eta_min + (base - o.eta_min) * (1 + std::cos(kPi * static_cast<double>(t) / o.t_max)) / 2;
      case SchedulerKind::Linear:
        return base * (o.start_factor + (o.end_factor - o.start_factor) *
                                            static_cast<double>(std::min(t, o.total_iters)) / o.total_iters);
      case SchedulerKind::Constant: return t < o.total_iters ? base * o.factor : base;
      case SchedulerKind::Polynomial:
        return base * std::pow(1.0 - static_cast<double>(std::min(t, o.total_iters)) / o.total_iters, o.power);
      case SchedulerKind::OneCycle: return one_cycle_lr(t);
      case SchedulerKind::LinearWarmup: {
        if (t < o.num_warmup_steps) return base * static_cast<double>(t) / std::max<int64_t>(1, o.num_warmup_steps);
        return base * std::max(0.0, static_cast<double>(o.num_training_steps - t) /
                                        std::max<int64_t>(1, o.num_training_steps - o.num_warmup_steps));
      }
      case SchedulerKind::CosineWarmup: {
        if (t < o.num_warmup_steps) return base * static_cast<double>(t) / std::max<int64_t>(1, o.num_warmup_steps);
        double progress = static_cast<double>(t - o.num_warmup_steps) /
                          std::max<int64_t>(1, o.num_training_steps - o.num_warmup_steps);
        return base * std::max(0.0, 0.5 * (1.0 + std::cos(kPi * o.num_cycles * 2.0 * progress)));
      }
      case SchedulerKind::ReduceOnPlateau: break;
    }
    return base;
  }

  double one_cycle_lr(int64_t t) const {
    const SchedulerOptions& o = options;
    double initial = o.max_lr / o.div_factor, minimum = initial / o.final_div_factor;
    double total = static_cast<double>(o.total_steps);
    struct Phase {
      double end_step, start_lr, end_lr;
    };
    std::vector<Phase> phases;
    if (o.three_phase) {
      phases = {{o.pct_start * total - 1, initial, o.max_lr},
                {2 * o.pct_start * total - 2, o.max_lr, initial},
                {total - 1, initial, minimum}};
    } else {
      phases = {{o.pct_start * total - 1, initial, o.max_lr}, {total - 1, o.max_lr, minimum}};
    }
    double start_step = 0;
    for (size_t i = 0; i < phases.size(); ++i) {
      if (static_cast<double>(t) <= phases[i].end_step || i + 1 == phases.size()) {
        double pct = (static_cast<double>(t) - start_step) / (phases[i].end_step - start_step);
        return anneal(phases[i].start_lr, phases[i].end_lr, pct, o.anneal_strategy == "cos");
      }
      start_step = phases[i].end_step;
    }
    return minimum;
  }

  void apply(int64_t t) {
    auto& g = groups();
    for (size_t i = 0; i < g.size(); ++i) g[i].options().set_lr(lr_at(base_lrs[i], t));
  }

  void raw_step() {
    if (options.kind == SchedulerKind::OneCycle) {
      require(last_epoch + 1 <= options.total_steps, ErrorCode::State,
              "OneCycle scheduler: tried to step " + std::to_string(last_epoch + 1) + " times, but total_steps is " +
                  std::to_string(options.total_steps));
    }
    ++last_epoch;
    apply(last_epoch);
  }

  bool is_better(double current) const {
    bool rel = options.threshold_mode == "rel";
    if (options.mode == "min")
      return rel ? current < best * (1.0 - options.threshold) : current < best - options.threshold;
    return rel ? current > best * (options.threshold + 1.0) : current > best + options.threshold;
  }

  void plateau_step(double metric) {
    ++last_epoch;
    if (is_better(metric)) {
      best = metric;
      bad_epochs = 0;
    } else {
      ++bad_epochs;
    }
    if (cooldown_counter > 0) {
      --cooldown_counter;
      bad_epochs = 0;
    }
    if (bad_epochs > options.patience) {
      for (auto& group : groups()) {
        double old_lr = group.options().get_lr();
        double new_lr = std::max(old_lr * options.factor, options.min_lr);
        if (old_lr - new_lr > options.eps) group.options().set_lr(new_lr);
      }
      cooldown_counter = options.cooldown;
      bad_epochs = 0;
    }
  }

  // Both the scheduler's option and its accelerator's must ask for it.
  bool steps_with_optimizer() const { return options.step_with_optimizer && accelerator_steps_with_optimizer; }

  // Accelerate's rule for a prepared scheduler: step only after a real optimizer step.
  int steps_for_this_call() const {
    if (!gradient_state || !steps_with_optimizer()) return 1;
    if (!gradient_state->sync_gradients || optimizer->step_was_skipped()) return 0;
    return split_batches ? 1 : num_processes;
  }
};

Scheduler::Scheduler(Optimizer& optimizer, const SchedulerOptions& options) : impl_(std::make_unique<Impl>()) {
  validate(options);
  impl_->optimizer = &optimizer;
  impl_->options = options;
  impl_->best =
      options.mode == "min" ? std::numeric_limits<double>::infinity() : -std::numeric_limits<double>::infinity();
  for (auto& group : impl_->groups()) {
    double base =
        options.kind == SchedulerKind::OneCycle ? options.max_lr / options.div_factor : group.options().get_lr();
    impl_->base_lrs.push_back(base);
  }
  impl_->publish_group_entries();
  if (options.kind != SchedulerKind::ReduceOnPlateau) impl_->apply(0);
}

Scheduler::~Scheduler() = default;
Scheduler::Scheduler(Scheduler&&) noexcept = default;
Scheduler& Scheduler::operator=(Scheduler&&) noexcept = default;

void Scheduler::step() {
  require_arg(impl_->options.kind != SchedulerKind::ReduceOnPlateau,
              "ReduceOnPlateau scheduler: step needs the metric (step(metric))");
  Impl& impl = *impl_;
  if (impl.gradient_state && impl.steps_with_optimizer() && !impl.gradient_state->sync_gradients &&
      impl.adjust_scheduler) {
    ++impl.adjusted_steps;
  }
  const int steps = impl.steps_for_this_call();
  // As in Accelerate: only the per-process steps of a prepared scheduler stop
  // at OneCycle's cap; one plain step past it fails, like PyTorch's.
  const bool capped = impl.gradient_state && impl.steps_with_optimizer() && !impl.split_batches;
  for (int i = 0; i < steps; ++i) {
    if (capped && impl.options.kind == SchedulerKind::OneCycle &&
        impl.last_epoch + impl.adjusted_steps + 1 > impl.options.total_steps) {
      break;
    }
    impl.raw_step();
  }
}

void Scheduler::step(double metric) {
  require_arg(impl_->options.kind == SchedulerKind::ReduceOnPlateau,
              "step(metric) is for ReduceOnPlateau; this scheduler takes step()");
  require_arg(std::isfinite(metric), "ReduceOnPlateau scheduler: the metric is not finite: " + std::to_string(metric));
  if (impl_->steps_for_this_call() > 0) impl_->plateau_step(metric);
}

double Scheduler::last_lr() const {
  return impl_->optimizer->torch_optimizer().param_groups().front().options().get_lr();
}
int64_t Scheduler::last_epoch() const { return impl_->last_epoch; }
const SchedulerOptions& Scheduler::options() const { return impl_->options; }

std::weak_ptr<const void> Scheduler::lifetime() const { return impl_->alive; }

CheckpointObject Scheduler::checkpoint_object() const {
  Impl* impl = impl_.get();  // heap: stays put when the Scheduler moves
  return CheckpointObject{[impl] { return Scheduler::save_pickle(*impl); },
                          [impl](const std::string& bytes) { Scheduler::load_bytes(*impl, bytes); }};
}

std::string Scheduler::save_pickle(Impl& impl) {
  return detail::pickle_state_dict(detail::scheduler_state_dict(impl.options, impl.position()));
}

void Scheduler::load_bytes(Impl& impl, const std::string& bytes) {
  // Checkpoints written before libaccel used PyTorch's format hold JSON.
  if (!detail::is_pickle(bytes)) return load_json(impl, bytes);
  const std::string label = std::string("scheduler state (") + detail::torch_scheduler_class(impl.options.kind) + ")";
  // PyTorch 1.13's own OneCycleLR and MultiStepLR states need the scheduler vocabulary (read_torch_save).
  const c10::IValue state = detail::unpickle_state_dict(bytes, label, detail::PickleVocabulary::Scheduler);
  impl.restore(detail::read_scheduler_state_dict(impl.options, state, impl.groups().size(), label));
}

std::string Scheduler::state_json() const { return save_json(*impl_); }
void Scheduler::load_state_json(const std::string& json) { load_json(*impl_, json); }

std::string Scheduler::save_json(Impl& impl) {
  auto* impl_ = &impl;
  nlohmann::json state;
  state["kind"] = static_cast<int>(impl_->options.kind);
  state["last_epoch"] = impl_->last_epoch;
  state["base_lrs"] = impl_->base_lrs;
  std::vector<double> lrs;
  for (auto& group : impl_->groups()) lrs.push_back(group.options().get_lr());
  state["lrs"] = lrs;
  state["best"] =
      std::isfinite(impl_->best) ? nlohmann::json(impl_->best) : nlohmann::json(nullptr);  // JSON has no inf
  state["bad_epochs"] = impl_->bad_epochs;
  state["cooldown_counter"] = impl_->cooldown_counter;
  state["adjusted_steps"] = impl_->adjusted_steps;
  return state.dump();
}

void Scheduler::load_json(Impl& impl, const std::string& json) {
  nlohmann::json state = detail::parse_json(json, "scheduler state", ErrorCode::IO);
  require(state.is_object(), ErrorCode::IO, "scheduler state: not a JSON object");
  // Every field is read and checked before any is applied.
  auto field = [&](const char* name) -> const nlohmann::json& {
    require(state.contains(name), ErrorCode::IO, std::string("scheduler state: the field \"") + name + "\" is missing");
    return state[name];
  };
  auto wrong = [](const char* name, const char* expected) {
    fail(ErrorCode::IO, std::string("scheduler state: \"") + name + "\" is not " + expected);
  };
  auto integer = [&](const char* name, bool optional) -> int64_t {
    if (optional && !state.contains(name)) return 0;
    const nlohmann::json& value = field(name);
    if (!value.is_number_integer()) wrong(name, "an integer");
    return value.get<int64_t>();
  };
  auto numbers = [&](const char* name) {
    const nlohmann::json& value = field(name);
    if (!value.is_array()) wrong(name, "an array of numbers");
    std::vector<double> out;
    for (const auto& v : value) {
      if (!v.is_number()) wrong(name, "an array of numbers");
      out.push_back(v.get<double>());
    }
    return out;
  };
  const int64_t kind = integer("kind", false);
  require_arg(kind == static_cast<int>(impl.options.kind), "scheduler state: saved by a scheduler of kind " +
                                                               std::to_string(kind) + ", this one is of kind " +
                                                               std::to_string(static_cast<int>(impl.options.kind)));
  const int64_t last_epoch = integer("last_epoch", false);
  const std::vector<double> base_lrs = numbers("base_lrs"), lrs = numbers("lrs");
  auto& groups = impl.groups();
  require_arg(lrs.size() == groups.size() && base_lrs.size() == groups.size(),
              "scheduler state: " + std::to_string(lrs.size()) + " parameter groups saved, the optimizer has " +
                  std::to_string(groups.size()));
  if (state.contains("best") && !state["best"].is_number() && !state["best"].is_null()) wrong("best", "a number");
  const int64_t bad_epochs = integer("bad_epochs", true), cooldown_counter = integer("cooldown_counter", true);
  const int64_t adjusted_steps = integer("adjusted_steps", true);

  impl.last_epoch = last_epoch;
  impl.base_lrs = base_lrs;
  impl.publish_group_entries();
  impl.best = state.contains("best") && state["best"].is_number()
                  ? state["best"].get<double>()
                  : (impl.options.mode == "min" ? std::numeric_limits<double>::infinity()
                                                : -std::numeric_limits<double>::infinity());
  impl.bad_epochs = bad_epochs;
  impl.cooldown_counter = cooldown_counter;
  impl.adjusted_steps = adjusted_steps;
  for (size_t g = 0; g < groups.size(); ++g) groups[g].options().set_lr(lrs[g]);
}

void Scheduler::bind(std::shared_ptr<GradientState> gradient_state, int num_processes, bool split_batches,
                     bool adjust_scheduler, bool step_with_optimizer) {
  impl_->gradient_state = std::move(gradient_state);
  impl_->accelerator_steps_with_optimizer = step_with_optimizer;
  impl_->num_processes = num_processes;
  impl_->split_batches = split_batches;
  impl_->adjust_scheduler = adjust_scheduler;
}

}  // namespace accel
