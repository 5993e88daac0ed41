#include "capi/handles.hpp"

using namespace accel::capi;

namespace {

void init_default_scheduler_options(accel_scheduler_options* opts) {
  accel_scheduler_options_init(opts, ACCEL_SCHED_STEP);
}

accel::SchedulerOptions to_core(const accel_scheduler_options& o) {
  const int kind = enum_value(o.kind);
  accel::require_arg(kind >= ACCEL_SCHED_STEP && kind <= ACCEL_SCHED_REDUCE_ON_PLATEAU,
                     "kind " + std::to_string(kind) + " is not an accel_scheduler_kind");
  accel::require_arg(o.milestones != nullptr || o.num_milestones == 0,
                     "milestones is NULL but num_milestones is " + std::to_string(o.num_milestones));
  auto core = accel::SchedulerOptions::defaults(static_cast<accel::SchedulerKind>(kind));
  core.step_size = o.step_size;
  core.gamma = o.gamma;
  if (o.num_milestones > 0) core.milestones.assign(o.milestones, o.milestones + o.num_milestones);
  core.t_max = o.t_max;
  core.eta_min = o.eta_min;
  core.start_factor = o.start_factor;
  core.end_factor = o.end_factor;
  core.total_iters = o.total_iters;
  core.factor = o.factor;
  core.power = o.power;
  core.max_lr = o.max_lr;
  core.total_steps = o.total_steps;
  core.pct_start = o.pct_start;
  core.anneal_strategy = o.anneal_linear ? "linear" : "cos";
  core.div_factor = o.div_factor;
  core.final_div_factor = o.final_div_factor;
  core.three_phase = o.three_phase != 0;
  core.num_warmup_steps = o.num_warmup_steps;
  core.num_training_steps = o.num_training_steps;
  core.num_cycles = o.num_cycles;
  core.mode = o.mode_max ? "max" : "min";
  core.patience = o.patience;
  core.threshold = o.threshold;
  core.threshold_mode = o.threshold_abs ? "abs" : "rel";
  core.cooldown = o.cooldown;
  core.min_lr = o.min_lr;
  core.eps = o.eps;
  core.step_with_optimizer = o.step_with_optimizer != 0;
  return core;
}

}  // namespace

extern "C" {

ACCEL_API void accel_scheduler_options_init(accel_scheduler_options* opts, accel_scheduler_kind kind) {
  if (opts == nullptr) return;
  const int value = enum_value(kind);
  bool known = value >= ACCEL_SCHED_STEP && value <= ACCEL_SCHED_REDUCE_ON_PLATEAU;
  auto d =
      accel::SchedulerOptions::defaults(known ? static_cast<accel::SchedulerKind>(value) : accel::SchedulerKind::Step);
  *opts = accel_scheduler_options{};
  opts->struct_size = sizeof(accel_scheduler_options);
  std::memcpy(&opts->kind, &kind, sizeof kind);  // kept, not loaded: create() names an unknown kind
  opts->step_size = d.step_size;
  opts->gamma = d.gamma;
  opts->t_max = d.t_max;
  opts->eta_min = d.eta_min;
  opts->start_factor = d.start_factor;
  opts->end_factor = d.end_factor;
  opts->total_iters = d.total_iters;
  opts->factor = d.factor;
  opts->power = d.power;
  opts->max_lr = d.max_lr;
  opts->total_steps = d.total_steps;
  opts->pct_start = d.pct_start;
  opts->anneal_linear = 0;
  opts->div_factor = d.div_factor;
  opts->final_div_factor = d.final_div_factor;
  opts->three_phase = 0;
  opts->num_warmup_steps = d.num_warmup_steps;
  opts->num_training_steps = d.num_training_steps;
  opts->num_cycles = d.num_cycles;
  opts->patience = d.patience;
  opts->threshold = d.threshold;
  opts->cooldown = d.cooldown;
  opts->min_lr = d.min_lr;
  opts->eps = d.eps;
  opts->step_with_optimizer = 1;
}

ACCEL_API accel_status accel_scheduler_create(accel_optimizer* optimizer, const accel_scheduler_options* opts,
                                              accel_scheduler** out) {
  return guarded([&] {
    auto& result = out_param(out, "out");
    auto& opt = deref(optimizer, "optimizer");
    accel::require_arg(opts != nullptr, "opts is NULL: initialise it with accel_scheduler_options_init");
    auto options = to_core(read_options(opts, "opts", init_default_scheduler_options));
    auto handle = std::make_unique<accel_scheduler>();
    handle->optimizer = opt.optimizer;
    handle->scheduler = std::make_unique<accel::Scheduler>(*opt.optimizer, options);
    publish(std::move(handle), &result);
  });
}

ACCEL_API void accel_scheduler_free(accel_scheduler* scheduler) { release(scheduler); }

ACCEL_API accel_status accel_scheduler_step(accel_scheduler* scheduler) {
  return guarded([&] { deref(scheduler, "scheduler").scheduler->step(); });
}

ACCEL_API accel_status accel_scheduler_step_metric(accel_scheduler* scheduler, double metric) {
  return guarded([&] { deref(scheduler, "scheduler").scheduler->step(metric); });
}

ACCEL_API accel_status accel_scheduler_get_last_lr(const accel_scheduler* scheduler, double* out) {
  return guarded([&] { out_param(out, "out") = deref(scheduler, "scheduler").scheduler->last_lr(); });
}

ACCEL_API accel_status accel_scheduler_last_epoch(const accel_scheduler* scheduler, int64_t* out) {
  return guarded([&] { out_param(out, "out") = deref(scheduler, "scheduler").scheduler->last_epoch(); });
}

}  // extern "C"
