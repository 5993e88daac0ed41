// A training job for the fault-injection test (run_fault_injection.sh): it
// saves a checkpoint after every step, so a kill -9 at a random moment lands
// inside save_state most of the time, and when started again it resumes the
// way users write it (load the newest checkpoint if there is one) and checks
// what it got.
//   checkpoint_fault reference DIR STEPS      writes DIR/fingerprints: one line per step
//   checkpoint_fault MODE DIR STEPS REFERENCE [MORE]
//       MODE: limit1, limit2 (automatic naming with that total_limit) or fixed
//       (one directory); with MORE, the run stops MORE steps after where it
//       started or resumed (a restart only has to show it continues correctly).
// In MODE runs each rank writes DIR/pid_<rank> once prepared, rank 0 appends
// every step whose save_state returned to DIR/committed, and a resumed run
// checks: the step it resumed at is at least the last committed one, its
// parameters are the reference's at that step, at most total_limit
// checkpoints exist, and the run ends with the reference's final parameters.
#include <ATen/ATen.h>
#include <unistd.h>

#include <cstdio>
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "accel/accel.hpp"

namespace fs = std::filesystem;

namespace {

const char* kSpec = R"([{"type": "Linear", "in_features": 8, "out_features": 32}, {"type": "Tanh"},
                        {"type": "Linear", "in_features": 32, "out_features": 4}])";

// FNV-1a over the parameters' bytes: equal fingerprints mean bitwise-equal parameters.
std::string fingerprint(const accel::Model& model) {
  uint64_t hash = 1469598103934665603ull;
  for (const at::Tensor& p : model.parameters()) {
    at::Tensor c = p.detach().contiguous();
    const auto* bytes = static_cast<const unsigned char*>(c.data_ptr());
    for (size_t i = 0, n = static_cast<size_t>(c.numel()) * c.element_size(); i < n; ++i) {
      hash = (hash ^ bytes[i]) * 1099511628211ull;
    }
  }
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(hash));
  return text;
}

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "checkpoint_fault: FAIL: %s\n", what.c_str());
  std::exit(3);
}

std::vector<std::string> lines_of(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

int run(const std::string& mode, const std::string& dir, int64_t steps, const std::string& reference, int64_t more) {
  const bool is_reference = mode == "reference";
  const int64_t limit = mode == "limit1" ? 1 : mode == "limit2" ? 2 : 0;
  if (!is_reference && mode != "fixed" && limit == 0) fail("unknown mode " + mode);
  accel::AcceleratorOptions options;
  options.timeout = std::chrono::seconds(30);
  options.project.project_dir = dir;
  options.project.automatic_checkpoint_naming = limit > 0;
  options.project.total_limit = limit;
  accel::Accelerator accelerator(options);
  accelerator.set_seed(5);
  at::Tensor x = at::randn({64, 8}), y = at::randint(0, 4, {64}, at::kLong);
  accel::Model model = accel::Model::from_json(kSpec);
  accel::Optimizer optimizer(model, accel::OptimizerOptions::defaults(accel::OptimizerKind::AdamW));
  accel::DataLoaderOptions loader_options;
  loader_options.batch_size = 4;
  loader_options.shuffle = true;
  loader_options.seed = 9;
  accel::DataLoader loader(std::make_shared<accel::TensorDataset>(std::vector<at::Tensor>{x, y}), loader_options);
  accelerator.prepare(model);
  accelerator.prepare(optimizer);
  accelerator.prepare(loader);
  int64_t step = 0;
  accelerator.register_for_checkpointing(
      {[&] { return std::to_string(step); }, [&](const std::string& bytes) { step = std::stoll(bytes); }});
  const int rank = accelerator.process_index();
  fs::create_directories(dir);
  std::vector<std::string> expected = is_reference ? std::vector<std::string>{} : lines_of(reference);
  if (!is_reference && static_cast<int64_t>(expected.size()) != steps + 1) fail("reference has the wrong length");

  // The restart recipe, as users write it.
  const std::string fixed_dir = dir + "/checkpoint";
  bool resumed = false;
  std::error_code none;
  if (limit > 0 && !fs::is_empty(dir + "/checkpoints", none) && !none) {
    accelerator.load_state();
    resumed = true;
  } else if (mode == "fixed" && fs::exists(fixed_dir)) {
    accelerator.load_state(fixed_dir);
    resumed = true;
  }
  const auto committed = lines_of(dir + "/committed");
  if (!resumed && !committed.empty())
    fail("no checkpoint to resume from, but step " + committed.back() + " was committed");
  if (resumed) {
    int64_t last = committed.empty() ? -1 : std::stoll(committed.back());
    if (step < last)
      fail("resumed at step " + std::to_string(step) + ", but step " + std::to_string(last) + " was committed");
    if (fingerprint(model) != expected[static_cast<size_t>(step)]) {
      fail("parameters after load_state differ from the reference at step " + std::to_string(step));
    }
    std::printf("rank %d: resumed at step %lld (last committed %lld)\n", rank, static_cast<long long>(step),
                static_cast<long long>(last));
    std::fflush(stdout);  // before a kill can take the buffer with it
  }
  if (!is_reference) std::ofstream(dir + "/pid_" + std::to_string(rank)) << ::getpid() << "\n";
  const int64_t until = more > 0 ? std::min(steps, step + more) : steps;

  std::ofstream fingerprints;
  if (is_reference && rank == 0) {
    fingerprints.open(dir + "/fingerprints");
    fingerprints << fingerprint(model) << "\n";
  }
  while (step < until) {
    auto batch = loader.next();
    if (!batch) continue;
    optimizer.zero_grad();
    accelerator.backward(accel::compute_loss(accel::LossKind::CrossEntropy, model.forward((*batch)[0]), (*batch)[1]));
    optimizer.step();
    ++step;
    if (is_reference) {
      if (rank == 0) fingerprints << fingerprint(model) << "\n";
      continue;
    }
    limit > 0 ? accelerator.save_state() : accelerator.save_state(fixed_dir);
    if (rank == 0) std::ofstream(dir + "/committed", std::ios::app) << step << "\n";
  }
  if (!is_reference) {
    if (fingerprint(model) != expected[static_cast<size_t>(until)]) {
      fail("the parameters at step " + std::to_string(until) + " differ from the reference's");
    }
    if (limit > 0) {
      int64_t kept = 0;
      for (const auto& entry : fs::directory_iterator(dir + "/checkpoints")) {
        kept += entry.path().filename().string().rfind("checkpoint_", 0) == 0;
      }
      if (kept > limit) fail(std::to_string(kept) + " checkpoints kept, total_limit is " + std::to_string(limit));
    }
  }
  accelerator.wait_for_everyone();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4 || argc > 6) {
    std::fprintf(stderr, "usage: checkpoint_fault reference|limit1|limit2|fixed DIR STEPS [REFERENCE [MORE]]\n");
    return 2;
  }
  try {
    return run(argv[1], argv[2], std::atoll(argv[3]), argc >= 5 ? argv[4] : "", argc == 6 ? std::atoll(argv[5]) : 0);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "checkpoint_fault: %s\n", error.what());
    return 1;
  }
}
