// Typed, validated access to one layer's arguments in a JSON model spec.
//
// Every reader checks the JSON type and range before a value can reach a
// LibTorch constructor, and reports failures as accel::Error naming the layer
// and the argument. The reader remembers which keys were read, so a misspelt
// key is reported instead of silently falling back to a default.
#pragma once

#include <nlohmann/json.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace accel::detail {

// Inclusive lower bound on an integer argument, and how to name it in errors.
struct IntRange {
  int64_t min;
  const char* description;
};
inline constexpr IntRange kPositiveInt{1, "a positive integer"};
inline constexpr IntRange kNonNegativeInt{0, "a non-negative integer"};
inline constexpr IntRange kAnyInt{std::numeric_limits<int64_t>::min(), "an integer"};

// Bounds on a floating-point argument; non-finite values are always rejected.
struct RealRange {
  double min;
  double max;
  bool min_exclusive;
  const char* description;
};
inline constexpr RealRange kProbability{0.0, 1.0, false, "a probability in [0, 1]"};
inline constexpr RealRange kNonNegativeReal{0.0, std::numeric_limits<double>::max(), false, "a non-negative number"};
inline constexpr RealRange kPositiveReal{0.0, std::numeric_limits<double>::max(), true, "a positive number"};
inline constexpr RealRange kAnyReal{std::numeric_limits<double>::lowest(), std::numeric_limits<double>::max(), false,
                                    "a finite number"};

class LayerArgs {
 public:
  // `layer` must outlive this object.
  LayerArgs(const nlohmann::json& layer, size_t index, const std::string& type);
  // `where` names the layer in errors, e.g. node "h" layer 0 (TransformerEncoderLayer).
  LayerArgs(const nlohmann::json& layer, std::string where);

  const std::string& where() const { return where_; }

  int64_t required_int(const char* key, IntRange range);
  int64_t int_or(const char* key, int64_t fallback, IntRange range);
  // Absent and null both mean "not given", as Python's None.
  std::optional<int64_t> optional_int(const char* key, IntRange range);

  double real_or(const char* key, double fallback, RealRange range);
  std::optional<double> optional_real(const char* key, RealRange range);
  // Absent selects the fallback, null selects "none" (BatchNorm's momentum=None).
  std::optional<double> real_or_null(const char* key, double fallback, RealRange range);

  bool bool_or(const char* key, bool fallback);
  std::string choice_or(const char* key, const std::string& fallback, const std::vector<std::string>& allowed);

  // An int or a 2-element list, as PyTorch's _pair arguments (kernel_size, stride, ...).
  std::array<int64_t, 2> required_pair(const char* key, IntRange range);
  std::array<int64_t, 2> pair_or(const char* key, std::array<int64_t, 2> fallback, IntRange range);
  // Like pair_or, but a null value also selects the fallback (MaxPool2d's stride=None).
  std::array<int64_t, 2> pair_or_null(const char* key, std::array<int64_t, 2> fallback, IntRange range);
  // A pair whose elements may be null (adaptive pooling's output_size: None keeps the input size).
  std::array<std::optional<int64_t>, 2> required_pair_of_optional(const char* key, IntRange range);

  // An int or a non-empty list of ints (LayerNorm's normalized_shape).
  std::vector<int64_t> required_int_list(const char* key, IntRange range);

  // Peeks without marking the key as read: lets a builder choose how to read it.
  bool is_string(const char* key) const;

  [[noreturn]] void fail_argument(const char* key, const std::string& problem) const;
  // Throws for the first key that no reader asked for.
  void reject_unknown_keys() const;

 private:
  const nlohmann::json* find(const char* key);
  [[noreturn]] void fail_missing(const char* key) const;
  [[noreturn]] void fail_expected(const char* key, const std::string& expected, const nlohmann::json& value) const;
  int64_t to_int(const char* key, const nlohmann::json& value, IntRange range) const;
  std::array<int64_t, 2> to_pair(const char* key, const nlohmann::json& value, IntRange range) const;

  const nlohmann::json& layer_;
  std::string where_;
  std::set<std::string> read_keys_{"type"};
};

}  // namespace accel::detail
