// Loader benchmark (issue 3): samples/s of the IDX and callback loaders with
// 0, 1 and 2 workers, next to the training step rate of the Fashion-MNIST
// example model fed (a) from pre-loaded batches and (b) from the loader.
// Prints ratios against the pre-loaded run measured in the same invocation.
//
//   build/bin/loader_bench [--data /usr/share/datasets/fashion-mnist] [--steps 120] [--repeats 3]
#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "accel/accel.hpp"

namespace {

using Clock = std::chrono::steady_clock;

const char* kModel = R"([
  {"type": "Conv2d", "in_channels": 1, "out_channels": 16, "kernel_size": 3, "padding": 1}, {"type": "ReLU"},
  {"type": "MaxPool2d", "kernel_size": 2},
  {"type": "Conv2d", "in_channels": 16, "out_channels": 32, "kernel_size": 3, "padding": 1}, {"type": "ReLU"},
  {"type": "MaxPool2d", "kernel_size": 2}, {"type": "Flatten"},
  {"type": "Linear", "in_features": 1568, "out_features": 128}, {"type": "ReLU"},
  {"type": "Linear", "in_features": 128, "out_features": 10}])";
constexpr int64_t kBatch = 64;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// A callback dataset as a binding would write it: raw uint8 images, converted
// and normalised sample by sample in the callback.
std::shared_ptr<accel::Dataset> callback_dataset(const accel::TensorDataset& idx) {
  at::Tensor pixels = (idx.fields()[0] * 255).round().to(at::kByte).contiguous();
  at::Tensor labels = idx.fields()[1].contiguous();
  auto read = [pixels, labels](int64_t i, const std::vector<void*>& out) {
    const uint8_t* src = pixels.data_ptr<uint8_t>() + i * 784;
    float* dst = static_cast<float*>(out[0]);
    for (int p = 0; p < 784; ++p) dst[p] = (src[p] / 255.0f - 0.2860f) / 0.3530f;
    *static_cast<int64_t*>(out[1]) = labels.data_ptr<int64_t>()[i];
  };
  return std::make_shared<accel::CallbackDataset>(
      std::vector<accel::FieldSpec>{{at::kFloat, {1, 28, 28}}, {at::kLong, {}}}, [n = labels.size(0)] { return n; },
      read);
}

double loader_samples_per_s(const std::shared_ptr<accel::Dataset>& dataset, int workers, int64_t batches) {
  accel::DataLoaderOptions options;
  options.batch_size = kBatch;
  options.shuffle = true;
  options.num_workers = workers;
  accel::DataLoader loader(dataset, options);
  auto start = Clock::now();
  int64_t samples = 0;
  for (int64_t b = 0; b < batches; ++b) {
    auto batch = loader.next();
    if (!batch) batch = loader.next();
    samples += (*batch)[0].size(0);
  }
  return samples / std::chrono::duration<double>(Clock::now() - start).count();
}

struct Trainer {
  accel::Model model = accel::Model::from_json(kModel);
  accel::Optimizer optimizer{model, [] {
                               auto o = accel::OptimizerOptions::defaults(accel::OptimizerKind::Adam);
                               o.lr = 2e-3;
                               return o;
                             }()};
  void step(const accel::Batch& batch) {
    optimizer.zero_grad();
    at::Tensor loss = accel::compute_loss(accel::LossKind::CrossEntropy, model.forward(batch[0]), batch[1]);
    loss.backward();
    optimizer.step();
  }
};

double steps_per_s_preloaded(Trainer& trainer, const std::vector<accel::Batch>& batches, int64_t steps) {
  auto start = Clock::now();
  for (int64_t s = 0; s < steps; ++s) trainer.step(batches[static_cast<size_t>(s) % batches.size()]);
  return steps / std::chrono::duration<double>(Clock::now() - start).count();
}

double steps_per_s_loader(Trainer& trainer, const std::shared_ptr<accel::Dataset>& dataset, int workers, int64_t steps,
                          double* wait_ms) {
  accel::DataLoaderOptions options;
  options.batch_size = kBatch;
  options.shuffle = true;
  options.num_workers = workers;
  accel::DataLoader loader(dataset, options);
  auto start = Clock::now();
  double waited = 0;
  for (int64_t s = 0; s < steps; ++s) {
    auto before = Clock::now();
    auto batch = loader.next();
    if (!batch) batch = loader.next();
    waited += std::chrono::duration<double>(Clock::now() - before).count();
    trainer.step(*batch);
  }
  *wait_ms = waited / steps * 1e3;
  return steps / std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) {
  std::string data = "/usr/share/datasets/fashion-mnist";
  int64_t steps = 120;
  int repeats = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--data")) data = argv[i + 1];
    if (!std::strcmp(argv[i], "--steps")) steps = std::atol(argv[i + 1]);
    if (!std::strcmp(argv[i], "--repeats")) repeats = std::atoi(argv[i + 1]);
  }
  // As in any training program: creating the Accelerator also applies its
  // process settings (glibc malloc tuning; ACCEL_TUNE_MALLOC=0 turns it off).
  accel::Accelerator accelerator;
  auto idx = accel::load_idx_dataset(data + "/train-images-idx3-ubyte.gz", data + "/train-labels-idx1-ubyte.gz", 0.2860,
                                     0.3530);
  auto callbacks = callback_dataset(*idx);
  std::printf("loader_bench: batch %lld, %d intra-op threads, median of %d runs\n", static_cast<long long>(kBatch),
              at::get_num_threads(), repeats);

  std::printf("\n%-26s %8s %14s\n", "loader only", "workers", "samples/s");
  for (auto& [name, dataset] : std::vector<std::pair<std::string, std::shared_ptr<accel::Dataset>>>{
           {"IDX (in-memory tensors)", idx}, {"callback (per-sample fn)", callbacks}}) {
    for (int workers : {0, 1, 2}) {
      std::vector<double> runs;
      for (int r = 0; r < repeats; ++r) runs.push_back(loader_samples_per_s(dataset, workers, 300));
      std::printf("%-26s %8d %14.0f\n", name.c_str(), workers, median(runs));
    }
  }

  at::manual_seed(0);
  Trainer trainer;
  std::vector<accel::Batch> preloaded;
  for (int64_t b = 0; b < 50; ++b) {
    std::vector<int64_t> indices(kBatch);
    for (int64_t i = 0; i < kBatch; ++i) indices[static_cast<size_t>(i)] = (b * kBatch + i * 7919) % idx->size();
    preloaded.push_back(idx->get_batch(indices));
  }
  steps_per_s_preloaded(trainer, preloaded, 10);  // warm-up
  // The same kind of batches, kept: what the loader hands out, collected once.
  std::vector<accel::Batch> from_loader;
  {
    accel::DataLoaderOptions options;
    options.batch_size = kBatch;
    options.shuffle = true;
    accel::DataLoader loader(idx, options);
    for (int64_t b = 0; b < 50; ++b) from_loader.push_back(*loader.next());
  }
  struct Row {
    std::string name;
    std::shared_ptr<accel::Dataset> dataset;  // null: pre-loaded batches
    int workers;
    const std::vector<accel::Batch>* batches;
    std::vector<double> runs;
    std::vector<double> waits;
  };
  std::vector<Row> rows{{"pre-loaded batches", nullptr, 0, &preloaded},
                        {"pre-loaded loader batches", nullptr, 0, &from_loader},
                        {"IDX loader", idx, 0, nullptr},
                        {"IDX loader", idx, 1, nullptr},
                        {"callback loader", callbacks, 0, nullptr},
                        {"callback loader", callbacks, 1, nullptr}};
  // Contestants alternate within each repeat, and the order rotates between
  // repeats: the first run of a repeat measured up to 20% slow.
  for (int r = 0; r < repeats; ++r) {
    for (size_t k = 0; k < rows.size(); ++k) {
      Row& row = rows[(k + static_cast<size_t>(r)) % rows.size()];
      double wait = 0;
      row.runs.push_back(row.dataset ? steps_per_s_loader(trainer, row.dataset, row.workers, steps, &wait)
                                     : steps_per_s_preloaded(trainer, *row.batches, steps));
      row.waits.push_back(wait);
    }
  }
  double base = median(rows[0].runs);
  std::printf("\n%-26s %8s %10s %12s %18s\n", "training (example CNN)", "workers", "steps/s", "vs preloaded",
              "next() ms/step");
  for (const auto& row : rows) {
    double m = median(row.runs);
    std::printf("%-26s %8d %10.2f %11.3fx %18.3f\n", row.name.c_str(), row.workers, m, m / base, median(row.waits));
  }
  return 0;
}
