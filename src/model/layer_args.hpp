// Typed, validated access to one layer's arguments in a JSON model spec. It
// remembers which keys were read, so unknown (misspelt) keys are reported
// instead of silently ignored.
#pragma once

#include <nlohmann/json.hpp>

#include <array>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace accel::detail {

class LayerArgs {
 public:
  LayerArgs(const nlohmann::json& layer, size_t index, std::string type);

  int64_t required_int(const char* key, int64_t min_value = 1);
  int64_t int_or(const char* key, int64_t fallback, int64_t min_value = 1);
  std::optional<int64_t> optional_int(const char* key, int64_t min_value);
  double double_or(const char* key, double fallback, double min_value, double max_value);
  bool bool_or(const char* key, bool fallback);
  std::string string_or(const char* key, const std::string& fallback, const std::vector<std::string>& allowed);
  // An int or a 2-element list, as PyTorch's _pair arguments.
  std::array<int64_t, 2> required_pair(const char* key, int64_t min_value = 1);
  std::array<int64_t, 2> pair_or(const char* key, std::array<int64_t, 2> fallback, int64_t min_value = 1);
  // An int or a list of ints.
  std::vector<int64_t> required_int_list(const char* key);
  bool has(const char* key) const { return layer_.contains(key); }
  const nlohmann::json& raw(const char* key);

  // Throws for every key that was never read.
  void reject_unknown_keys() const;
  [[noreturn]] void fail_argument(const char* key, const std::string& problem) const;

 private:
  const nlohmann::json& take(const char* key);
  int64_t to_int(const char* key, const nlohmann::json& value, int64_t min_value) const;

  const nlohmann::json& layer_;
  std::string where_;
  std::set<std::string> used_{"type"};
};

}  // namespace accel::detail
