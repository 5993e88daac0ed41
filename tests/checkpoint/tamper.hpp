// Rewriting a checkpoint as someone who can write its directory could, and
// comparing everything load_state may change before and after a load that
// must fail: shared by the checkpoint safety tests.
#pragma once

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "checkpoint/checkpoint_dir.hpp"
#include "checkpoint/training_run.hpp"

namespace accel::test {

inline std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

inline void write_all(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

// Replaces a checkpoint file and records its new size and checksum in the
// manifest: what load_state checks beyond the checksums.
inline void tamper(const std::string& dir, const std::string& name, const std::string& bytes) {
  write_all(dir + "/" + name, bytes);
  nlohmann::json manifest = nlohmann::json::parse(read_all(dir + "/manifest.json"));
  accel::detail::FileDigest digest = accel::detail::digest_of(bytes);
  manifest["files"][name] = {{"bytes", digest.bytes}, {"xxh3", digest.xxh3}};
  write_all(dir + "/manifest.json", manifest.dump());
}

// Edits manifest.json's JSON.
template <class Edit>
void edit_manifest(const std::string& dir, Edit edit) {
  nlohmann::json manifest = nlohmann::json::parse(read_all(dir + "/manifest.json"));
  edit(manifest);
  write_all(dir + "/manifest.json", manifest.dump());
}

// Everything load_state may change, to compare before and after a failed load.
struct Snapshot {
  std::vector<at::Tensor> parameters;
  std::string optimizer, scheduler;
  at::Tensor generator;
  accel::DataLoader::Position position;
  int64_t steps;

  explicit Snapshot(TrainingRun& run)
      : optimizer(run.optimizer.state_bytes()),
        scheduler(run.scheduler.state_json()),
        generator(at::detail::getDefaultCPUGenerator().get_state()),
        position(run.loader.position()),
        steps(run.steps) {
    for (auto& p : run.model.parameters()) parameters.push_back(p.detach().clone());
  }
  void expect_equal(const Snapshot& other) const {
    ASSERT_EQ(parameters.size(), other.parameters.size());
    for (size_t i = 0; i < parameters.size(); ++i) EXPECT_TRUE(at::equal(parameters[i], other.parameters[i]));
    EXPECT_EQ(optimizer, other.optimizer);
    EXPECT_EQ(scheduler, other.scheduler);
    EXPECT_TRUE(at::equal(generator, other.generator));
    EXPECT_EQ(position.epoch, other.position.epoch);
    EXPECT_EQ(position.batches_consumed, other.position.batches_consumed);
    EXPECT_EQ(steps, other.steps);
  }
};

}  // namespace accel::test
