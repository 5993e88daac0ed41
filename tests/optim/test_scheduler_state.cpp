// Scheduler state as PyTorch's state_dict() pickle (scheduler.bin): every
// kind resumes exactly, the dict has PyTorch's keys, a state of another kind
// or other hyperparameters is refused before anything changes, the JSON of
// older checkpoints still loads, and a pickle naming code is refused unrun.
#include <ATen/ATen.h>
#include <caffe2/serialize/inline_container.h>
#include <gtest/gtest.h>
#include <torch/csrc/jit/serialization/pickle.h>
#include <torch/nn/modules/linear.h>

#include <filesystem>
#include <functional>

#include "accel/data.hpp"
#include "accel/error.hpp"
#include "accel/scheduler.hpp"
#include "optim/optimizer_state.hpp"

namespace {

using accel::SchedulerKind;

accel::Optimizer sgd(double lr) {
  torch::nn::Linear linear(1, 1);
  auto options = accel::OptimizerOptions::defaults(accel::OptimizerKind::Sgd);
  options.lr = lr;
  return accel::Optimizer(accel::Model::from_module(linear), options);
}

std::vector<accel::SchedulerOptions> every_kind() {
  std::vector<accel::SchedulerOptions> all;
  for (int k = 1; k <= 11; ++k) {
    auto o = accel::SchedulerOptions::defaults(static_cast<SchedulerKind>(k));
    o.step_size = 2;
    o.milestones = {2, 4, 4};
    o.t_max = 6;
    o.total_iters = 6;
    o.total_steps = 10;
    o.num_warmup_steps = 2;
    o.num_training_steps = 10;
    o.patience = 1;
    all.push_back(o);
  }
  return all;
}

void advance(accel::Scheduler& s, int steps, int from) {
  for (int i = 0; i < steps; ++i) {
    if (s.options().kind == SchedulerKind::ReduceOnPlateau) {
      s.step(1.0 + 0.1 * (from + i));  // worsening: the learning rate drops
    } else {
      s.step();
    }
  }
}

std::string save(const accel::Scheduler& s) { return s.checkpoint_object().save(); }
void load(accel::Scheduler& s, const std::string& bytes) { s.checkpoint_object().load(bytes); }

c10::impl::GenericDict dict_of(const std::string& bytes) {
  return accel::detail::unpickle_state_dict(bytes, "test").toGenericDict();
}

std::string with(const std::string& bytes, const std::function<void(c10::impl::GenericDict&)>& edit) {
  auto d = dict_of(bytes);
  edit(d);
  return accel::detail::pickle_state_dict(d);
}

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const accel::Error& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST(SchedulerState, EveryKindResumesExactly) {
  for (const auto& options : every_kind()) {
    accel::Optimizer a = sgd(1.0), b = sgd(1.0);
    accel::Scheduler run(a, options), resumed(b, options);
    advance(run, 4, 0);
    const std::string saved = save(run);
    EXPECT_EQ(saved.rfind("PK", 0), 0u) << "torch.save's zip container";
    load(resumed, saved);
    EXPECT_EQ(resumed.last_epoch(), run.last_epoch());
    advance(run, 3, 4);
    advance(resumed, 3, 4);
    EXPECT_EQ(resumed.last_epoch(), run.last_epoch()) << static_cast<int>(options.kind);
    EXPECT_EQ(resumed.last_lr(), run.last_lr()) << static_cast<int>(options.kind);
  }
}

TEST(SchedulerState, HasPyTorchsKeys) {
  auto options = every_kind();
  auto keys_of = [&](SchedulerKind kind) {
    accel::Optimizer o = sgd(1.0);
    accel::Scheduler s(o, options[static_cast<int>(kind) - 1]);
    advance(s, 3, 0);
    return dict_of(save(s));
  };
  auto step = keys_of(SchedulerKind::Step);
  for (const char* key : {"step_size", "gamma", "base_lrs", "last_epoch", "verbose", "_step_count",
                          "_get_lr_called_within_step", "_last_lr"}) {
    EXPECT_TRUE(step.contains(key)) << key;
  }
  EXPECT_EQ(step.at("last_epoch").toInt(), 3);
  EXPECT_EQ(step.at("_step_count").toInt(), 4);  // PyTorch counts the construction's step
  EXPECT_EQ(step.at("_last_lr").toListRef()[0].toDouble(), 0.1);

  auto milestones = keys_of(SchedulerKind::MultiStep).at("milestones").toGenericDict();
  EXPECT_EQ(milestones.at(int64_t{4}).toInt(), 2);  // PyTorch's Counter, as a dict

  auto cycle = keys_of(SchedulerKind::OneCycle);
  EXPECT_EQ(cycle.at("total_steps").toInt(), 10);
  auto phases = cycle.at("_schedule_phases").toListRef();
  ASSERT_EQ(phases.size(), 2u);
  EXPECT_DOUBLE_EQ(phases[0].toGenericDict().at("end_step").toDouble(), 2.0);  // pct_start 0.3 * 10 - 1
  EXPECT_EQ(phases[1].toGenericDict().at("end_lr").toStringRef(), "min_lr");
  EXPECT_FALSE(cycle.contains("anneal_func"));  // a bound method in PyTorch 1.13: code, never written

  auto warmup = keys_of(SchedulerKind::LinearWarmup);
  ASSERT_EQ(warmup.at("lr_lambdas").toListRef().size(), 1u);
  EXPECT_TRUE(warmup.at("lr_lambdas").toListRef()[0].isNone());

  auto plateau = keys_of(SchedulerKind::ReduceOnPlateau);
  for (const char* key : {"factor", "min_lrs", "patience", "cooldown", "cooldown_counter", "mode", "threshold",
                          "threshold_mode", "best", "num_bad_epochs", "mode_worse", "eps", "last_epoch", "_last_lr"}) {
    EXPECT_TRUE(plateau.contains(key)) << key;
  }
  EXPECT_FALSE(plateau.contains("base_lrs"));
}

// A state dict as PyTorch writes it has no libaccel key: the class is told by its keys.
TEST(SchedulerState, ReadsPyTorchsDictWithoutLibaccelsKey) {
  auto options = every_kind();
  for (auto kind : {SchedulerKind::Step, SchedulerKind::OneCycle, SchedulerKind::LinearWarmup,
                    SchedulerKind::ReduceOnPlateau, SchedulerKind::Constant}) {
    const auto& o = options[static_cast<int>(kind) - 1];
    accel::Optimizer a = sgd(1.0), b = sgd(1.0);
    accel::Scheduler run(a, o), resumed(b, o);
    advance(run, 3, 0);
    load(resumed, with(save(run), [](auto& d) { d.erase("libaccel_scheduler"); }));
    EXPECT_EQ(resumed.last_epoch(), 3);
    EXPECT_EQ(resumed.last_lr(), run.last_lr());
  }
}

TEST(SchedulerState, AdjustedMicroStepsTravelInStepCount) {
  auto cycle = accel::SchedulerOptions::defaults(SchedulerKind::OneCycle);
  cycle.total_steps = 4;
  auto gradient = std::make_shared<accel::GradientState>();
  accel::Optimizer a = sgd(1.0), c = sgd(1.0);
  accel::Scheduler adjusted(a, cycle), restored(c, cycle);
  adjusted.bind(gradient, 2, false, /*adjust_scheduler=*/true);
  restored.bind(gradient, 2, false, true);
  gradient->sync_gradients = false;
  adjusted.step();  // one micro-step counted towards the cap
  gradient->sync_gradients = true;
  adjusted.step();
  adjusted.step();
  ASSERT_EQ(adjusted.last_epoch(), 3);
  const std::string saved = save(adjusted);
  EXPECT_EQ(dict_of(saved).at("_step_count").toInt(), 5);  // 1 + 3 steps + 1 micro-step, as Accelerate counts
  load(restored, saved);
  restored.step();
  EXPECT_EQ(restored.last_epoch(), 3);  // at the cap already, as the saved one
}

TEST(SchedulerState, OtherKindOrHyperparametersAreRefusedAndNothingChanges) {
  auto options = every_kind();
  accel::Optimizer a = sgd(1.0), b = sgd(1.0), c = sgd(1.0);
  accel::Scheduler step(a, options[0]), exponential(b, options[2]), target(c, options[0]);
  advance(step, 3, 0);
  advance(exponential, 3, 0);
  advance(target, 1, 0);
  const std::string ours = save(target);
  struct Case {
    std::string bytes, expected;
    accel::ErrorCode code;
  };
  std::vector<Case> cases{
      {save(exponential), "saved by a exponential scheduler, this one is step", accel::ErrorCode::InvalidArgument},
      {with(save(exponential), [](auto& d) { d.erase("libaccel_scheduler"); }),
       "the state of ExponentialLR, this scheduler is StepLR", accel::ErrorCode::InvalidArgument},
      {with(save(step), [](auto& d) { d.insert_or_assign("step_size", int64_t{5}); }),
       "\"step_size\" is 5, this scheduler's is 2", accel::ErrorCode::InvalidArgument},
      {with(save(step), [](auto& d) { d.insert_or_assign("last_epoch", std::string("three")); }),
       "\"last_epoch\" is \"three\", not an integer", accel::ErrorCode::IO},
      {with(save(step),
            [](auto& d) {
              d.insert_or_assign("_last_lr", c10::List<double>({0.1, 0.1}));
            }),
       "\"_last_lr\" holds 2 learning rates, the optimizer has 1", accel::ErrorCode::InvalidArgument},
      {with(save(step), [](auto& d) { d.erase("base_lrs"); }), "lacks \"base_lrs\"", accel::ErrorCode::IO},
      {with(save(step), [](auto& d) { d.insert_or_assign("_step_count", int64_t{1}); }),
       "\"_step_count\" is 1, not at least last_epoch + 1 = 4", accel::ErrorCode::IO},
      {accel::detail::pickle_state_dict(c10::IValue(int64_t{3})), "not a dict", accel::ErrorCode::IO},
  };
  for (const Case& k : cases) {
    try {
      load(target, k.bytes);
      ADD_FAILURE() << "accepted: " << k.expected;
    } catch (const accel::Error& e) {
      EXPECT_NE(std::string(e.what()).find(k.expected), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("scheduler state"), std::string::npos) << e.what();
      EXPECT_EQ(e.code(), k.code) << e.what();
    }
    EXPECT_EQ(save(target), ours);
    EXPECT_EQ(target.last_epoch(), 1);
  }
}

TEST(SchedulerState, OlderCheckpointsJsonStillLoads) {
  auto options = every_kind();
  accel::Optimizer a = sgd(1.0), b = sgd(1.0);
  accel::Scheduler run(a, options[7]), resumed(b, options[7]);  // OneCycle
  advance(run, 4, 0);
  load(resumed, run.state_json());  // what checkpoint_object saved before PyTorch's format
  EXPECT_EQ(resumed.last_epoch(), 4);
  EXPECT_EQ(resumed.last_lr(), run.last_lr());
}

// torch.load's container holding a pickle that calls os.system: LibTorch's
// unpickler knows no such global, so loading fails and nothing runs.
TEST(SchedulerState, APickleNamingCodeIsRefusedUnrun) {
  const std::string marker = ::testing::TempDir() + "/accel_scheduler_pickle_ran";
  std::filesystem::remove(marker);
  for (const std::string module : {"posix", "os", "builtins"}) {
    const std::string function = module == "builtins" ? "eval" : "system";
    const std::string argument =
        module == "builtins" ? "__import__('os').system('touch " + marker + "')" : "touch " + marker;
    std::string pickle =
        "\x80\x02"
        "c" +
        module + "\n" + function + "\n";
    pickle += 'X';
    const uint32_t n = static_cast<uint32_t>(argument.size());
    pickle.append(reinterpret_cast<const char*>(&n), 4);
    pickle += argument +
              "\x85"
              "R.";
    std::string zip;
    {
      caffe2::serialize::PyTorchStreamWriter writer([&](const void* data, size_t size) {
        zip.append(static_cast<const char*>(data), size);
        return size;
      });
      writer.writeRecord("data.pkl", pickle.data(), pickle.size());
      writer.writeEndOfFile();
    }
    for (const std::string& bytes : {zip, pickle}) {
      accel::Optimizer o = sgd(1.0);
      accel::Scheduler s(o, accel::SchedulerOptions::defaults(SchedulerKind::Step));
      const std::string message = error_of([&] { load(s, bytes); });
      // The zip goes to the data-only reader, which names the global; a bare
      // pickle is refused by LibTorch's unpickler before that.
      const bool refused = message.find("names the global " + std::string(module) + ".") != std::string::npos ||
                           message.find("not a PyTorch pickle of plain data") != std::string::npos;
      EXPECT_NE(message.find("scheduler state (StepLR): "), std::string::npos) << module << ": " << message;
      EXPECT_TRUE(refused) << module << ": " << message;
      EXPECT_FALSE(std::filesystem::exists(marker)) << module;
    }
  }
}
