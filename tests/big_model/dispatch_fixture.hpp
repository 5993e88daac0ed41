// Shared by the dispatch tests (CPU and CUDA): a small JSON GPT, its
// checkpoint, greedy generation and a fresh temporary folder.
#pragma once

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "accel/big_model.hpp"
#include "formats/tensor_io.hpp"
#include "core/remove_tree.hpp"

namespace dispatch_fixture {

namespace fs = std::filesystem;

// A GPT whose blocks are top-level nodes h0..h{n-1}, so each block is brought
// in from disk on its own.
inline std::string gpt_spec(int layers, int d_model, int vocab) {
  const std::string d = std::to_string(d_model), v = std::to_string(vocab);
  std::string nodes = R"({"name": "wte", "type": "Embedding", "num_embeddings": )" + v + R"(, "embedding_dim": )" + d +
                      R"(}, {"name": "wpe", "type": "PositionalEmbedding", "num_positions": 64, "embedding_dim": )" +
                      d + R"(, "batch_first": true})";
  for (int i = 0; i < layers; ++i) {
    nodes += R"(, {"name": "h)" + std::to_string(i) + R"(", "type": "TransformerEncoderLayer", "d_model": )" + d +
             R"(, "nhead": 4, "dim_feedforward": )" + std::to_string(4 * d_model) +
             R"(, "dropout": 0.0, "activation": "gelu", "batch_first": true, "norm_first": true, "causal": true})";
  }
  nodes += R"(, {"name": "ln_f", "type": "LayerNorm", "normalized_shape": )" + d +
           R"(}, {"name": "logits", "type": "Linear", "in_features": )" + d + R"(, "out_features": )" + v +
           R"(, "bias": false})";
  return R"({"inputs": ["input_ids"], "init": {"std": 0.02, "seed": 0}, "nodes": [)" + nodes +
         R"(], "outputs": ["logits"]})";
}

inline std::string save(const accel::Model& model, const std::string& path) {
  std::vector<std::pair<std::string, at::Tensor>> tensors;
  for (const auto& list : {model.named_parameters(), model.named_buffers()}) {
    for (const auto& [name, t] : list) tensors.emplace_back(name, t);
  }
  std::ofstream(path, std::ios::binary) << accel::detail::serialize_tensors(tensors, {});
  return path;
}

// Greedy decoding of 8 tokens after a fixed prompt.
inline std::vector<int64_t> generate(accel::Model& model) {
  model.train(false);
  at::NoGradGuard no_grad;
  at::Tensor ids = at::tensor(std::vector<int64_t>{3, 1, 4, 1, 5, 9, 2, 6}, at::kLong).unsqueeze(0);
  std::vector<int64_t> out;
  for (int step = 0; step < 8; ++step) {
    at::Tensor logits = model.forward(accel::Model::NamedTensors{{"input_ids", ids}})[0].second;
    int64_t next = logits[0][-1].argmax().item<int64_t>();
    out.push_back(next);
    ids = at::cat({ids, at::full({1, 1}, next, at::kLong)}, 1);
  }
  return out;
}

inline std::string temp_dir(const std::string& name) {
  const std::string dir = ::testing::TempDir() + "/dispatch_" + name;
  accel::detail::remove_tree(dir);  // not fs::remove_all: see docs/gpu.md
  fs::create_directories(dir);
  return dir;
}

}  // namespace dispatch_fixture
