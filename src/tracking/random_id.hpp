// Random identifiers for runs and rows: MLflow's run ids, wandb's run ids,
// trackio's uuid4 hex. Unpredictable across processes started at the same
// moment (seeded from std::random_device), not cryptographic.
#pragma once

#include <random>
#include <string>
#include <string_view>

namespace accel::detail {

inline std::string random_id(std::string_view alphabet, size_t length) {
  thread_local std::mt19937_64 rng((static_cast<uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}());
  std::string id;
  for (size_t i = 0; i < length; ++i) id += alphabet[rng() % alphabet.size()];
  return id;
}

constexpr std::string_view kHexDigits = "0123456789abcdef";

}  // namespace accel::detail
