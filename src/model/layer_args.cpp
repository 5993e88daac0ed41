#include "model/layer_args.hpp"

#include <cmath>
#include <utility>

#include "accel/error.hpp"
#include "core/closest_name.hpp"
#include "core/json.hpp"

namespace accel::detail {

namespace {

std::string quoted_list(const std::vector<std::string>& names) {
  std::string list;
  for (const auto& name : names) list += (list.empty() ? "\"" : ", \"") + name + "\"";
  return list;
}

}  // namespace

LayerArgs::LayerArgs(const nlohmann::json& layer, size_t index, const std::string& type)
    : layer_(layer), where_("layer " + std::to_string(index) + " (" + type + ")") {}

LayerArgs::LayerArgs(const nlohmann::json& layer, std::string where) : layer_(layer), where_(std::move(where)) {}

void LayerArgs::fail_argument(const char* key, const std::string& problem) const {
  fail(ErrorCode::InvalidArgument, where_ + ": argument \"" + key + "\" " + problem);
}

void LayerArgs::fail_expected(const char* key, const std::string& expected, const nlohmann::json& value) const {
  fail_argument(key, "must be " + expected + ", got " + describe_json(value));
}

void LayerArgs::fail_missing(const char* key) const {
  // A typo ("in_feature") shows up as the real key missing; name the key that is
  // there instead when it is very close (2 edits: "out_features" is 3 from
  // "in_features" and may well be read later), as the other readers have not run yet.
  std::string hint;
  for (const auto& item : layer_.items()) {
    if (read_keys_.count(item.key()) || !closest_name(item.key(), {key}, 2)) continue;
    hint = " (unknown argument \"" + item.key() + "\": did you mean \"" + key + "\"?)";
    break;
  }
  fail(ErrorCode::InvalidArgument, where_ + ": missing required argument \"" + key + "\"" + hint);
}

const nlohmann::json* LayerArgs::find(const char* key) {
  read_keys_.insert(key);
  auto it = layer_.find(key);
  return it == layer_.end() ? nullptr : &*it;
}

bool LayerArgs::is_string(const char* key) const {
  auto it = layer_.find(key);
  return it != layer_.end() && it->is_string();
}

int64_t LayerArgs::to_int(const char* key, const nlohmann::json& value, IntRange range) const {
  if (!value.is_number_integer()) fail_expected(key, range.description, value);
  // nlohmann keeps integers above INT64_MAX as unsigned; reading them as
  // int64_t would wrap them into small or negative values.
  constexpr auto kLargest = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  if (value.is_number_unsigned() && value.get<uint64_t>() > kLargest) {
    fail_argument(key, "is too large, got " + describe_json(value));
  }
  int64_t number = value.get<int64_t>();
  if (number < range.min) fail_expected(key, range.description, value);
  return number;
}

int64_t LayerArgs::required_int(const char* key, IntRange range) {
  const nlohmann::json* value = find(key);
  if (!value) fail_missing(key);
  return to_int(key, *value, range);
}

int64_t LayerArgs::int_or(const char* key, int64_t fallback, IntRange range) {
  const nlohmann::json* value = find(key);
  return value ? to_int(key, *value, range) : fallback;
}

std::optional<int64_t> LayerArgs::optional_int(const char* key, IntRange range) {
  const nlohmann::json* value = find(key);
  if (!value || value->is_null()) return std::nullopt;
  return to_int(key, *value, range);
}

double LayerArgs::real_or(const char* key, double fallback, RealRange range) {
  return optional_real(key, range).value_or(fallback);
}

std::optional<double> LayerArgs::optional_real(const char* key, RealRange range) {
  const nlohmann::json* value = find(key);
  if (!value || value->is_null()) return std::nullopt;
  if (!value->is_number()) fail_expected(key, range.description, *value);
  double number = value->get<double>();
  bool below = range.min_exclusive ? number <= range.min : number < range.min;
  if (!std::isfinite(number) || below || number > range.max) fail_expected(key, range.description, *value);
  return number;
}

std::optional<double> LayerArgs::real_or_null(const char* key, double fallback, RealRange range) {
  if (!find(key)) return fallback;
  return optional_real(key, range);
}

bool LayerArgs::bool_or(const char* key, bool fallback) {
  const nlohmann::json* value = find(key);
  if (!value) return fallback;
  if (!value->is_boolean()) fail_expected(key, "true or false", *value);
  return value->get<bool>();
}

std::string LayerArgs::choice_or(const char* key, const std::string& fallback,
                                 const std::vector<std::string>& allowed) {
  const nlohmann::json* value = find(key);
  if (!value) return fallback;
  if (value->is_string()) {
    const auto& text = value->get_ref<const std::string&>();
    for (const auto& choice : allowed) {
      if (choice == text) return text;
    }
  }
  fail_expected(key, "one of " + quoted_list(allowed), *value);
}

std::array<int64_t, 2> LayerArgs::to_pair(const char* key, const nlohmann::json& value, IntRange range) const {
  if (value.is_array()) {
    if (value.size() != 2) fail_expected(key, std::string(range.description) + " or a list of 2", value);
    return {to_int(key, value[0], range), to_int(key, value[1], range)};
  }
  int64_t both = to_int(key, value, range);
  return {both, both};
}

std::array<int64_t, 2> LayerArgs::required_pair(const char* key, IntRange range) {
  const nlohmann::json* value = find(key);
  if (!value) fail_missing(key);
  return to_pair(key, *value, range);
}

std::array<int64_t, 2> LayerArgs::pair_or(const char* key, std::array<int64_t, 2> fallback, IntRange range) {
  const nlohmann::json* value = find(key);
  return value ? to_pair(key, *value, range) : fallback;
}

std::array<int64_t, 2> LayerArgs::pair_or_null(const char* key, std::array<int64_t, 2> fallback, IntRange range) {
  const nlohmann::json* value = find(key);
  return value && !value->is_null() ? to_pair(key, *value, range) : fallback;
}

std::array<std::optional<int64_t>, 2> LayerArgs::required_pair_of_optional(const char* key, IntRange range) {
  const nlohmann::json* value = find(key);
  if (!value) fail_missing(key);
  if (!value->is_array()) {
    int64_t both = to_int(key, *value, range);
    return {both, both};
  }
  if (value->size() != 2) {
    fail_expected(key, std::string(range.description) + " or a list of 2 (each may be null)", *value);
  }
  std::array<std::optional<int64_t>, 2> pair;
  for (size_t i = 0; i < 2; ++i) {
    if (!(*value)[i].is_null()) pair[i] = to_int(key, (*value)[i], range);
  }
  return pair;
}

std::vector<int64_t> LayerArgs::required_int_list(const char* key, IntRange range) {
  const nlohmann::json* value = find(key);
  if (!value) fail_missing(key);
  if (!value->is_array()) return {to_int(key, *value, range)};
  if (value->empty()) fail_expected(key, std::string(range.description) + " or a non-empty list", *value);
  std::vector<int64_t> numbers;
  for (const auto& item : *value) numbers.push_back(to_int(key, item, range));
  return numbers;
}

void LayerArgs::reject_unknown_keys() const {
  for (const auto& item : layer_.items()) {
    if (!read_keys_.count(item.key())) {
      // Every key the layer takes has been asked for by now: the candidates for a typo.
      const std::vector<std::string> known(read_keys_.begin(), read_keys_.end());
      const auto meant = closest_name(item.key(), known);
      fail(ErrorCode::InvalidArgument, where_ + ": unknown argument \"" + item.key() + "\"" +
                                           (meant ? " (did you mean \"" + *meant + "\"?)" : std::string()));
    }
  }
}

}  // namespace accel::detail
