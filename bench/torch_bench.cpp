// Contestant (c): a plain LibTorch loop without libaccel (torch::nn +
// torch::optim::AdamW), one process: the overhead floor for (a) and (b).
//   OMP_NUM_THREADS=2 build/bin/torch_bench --workload tiny --steps 2000 --threads 2
#include <torch/nn.h>
#include <torch/optim/adamw.h>

#include <cstdio>
#include <exception>

#include "bench_common.hpp"

namespace nn = torch::nn;

static nn::Sequential build(const std::string& name) {
  using nn::Linear;
  if (name == "tiny") return nn::Sequential(Linear(784, 128), nn::ReLU(), Linear(128, 10));
  if (name == "mlp")
    return nn::Sequential(Linear(784, 1024), nn::ReLU(), Linear(1024, 1024), nn::ReLU(), Linear(1024, 10));
  if (name == "cnn")
    return nn::Sequential(nn::Conv2d(nn::Conv2dOptions(1, 512, 3)), nn::MaxPool2d(nn::MaxPool2dOptions(2).stride(2)),
                          nn::Conv2d(nn::Conv2dOptions(512, 256, 5)), nn::MaxPool2d(nn::MaxPool2dOptions(2).stride(2)),
                          nn::Dropout2d(0.1), nn::AdaptiveMaxPool2d(nn::AdaptiveMaxPool2dOptions({1, 1})),
                          nn::Flatten(), Linear(256, 128), nn::ReLU(), Linear(128, 10));
  nn::Sequential s;
  for (int i = 0; i < 4; ++i) {
    s->push_back(Linear(4096, 4096));
    s->push_back(nn::ReLU());
  }
  s->push_back(Linear(4096, 10));
  return s;
}

int main(int argc, char** argv) try {
  bench::Args args = bench::parse_args(argc, argv);
  const bench::Workload& w = bench::workload(args.workload);
  torch::manual_seed(0);
  nn::Sequential model = build(w.name);
  torch::optim::AdamW optimizer(model->parameters(), torch::optim::AdamWOptions(1e-3).weight_decay(0.01));
  bench::Data data(w, 0);
  auto step = [&](int64_t i) {
    size_t b = static_cast<size_t>(i) % data.x.size();
    optimizer.zero_grad();
    at::Tensor loss = torch::nn::functional::cross_entropy(model->forward(data.x[b]), data.y[b]);
    loss.backward();
    optimizer.step();
  };
  for (int64_t i = 0; i < args.warmup; ++i) step(i);
  auto start = bench::Clock::now();
  for (int64_t i = 0; i < args.steps; ++i) step(i);
  bench::print_result("torch_cpp", args, 0, 1, args.steps, bench::since(start));
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "torch_bench: %s\n", e.what());
  return 1;
}
