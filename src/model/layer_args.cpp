#include "model/layer_args.hpp"

#include <cmath>

#include "accel/error.hpp"

namespace accel::detail {

LayerArgs::LayerArgs(const nlohmann::json& layer, size_t index, std::string type)
    : layer_(layer), where_("layer " + std::to_string(index) + " (" + type + ")") {}

void LayerArgs::fail_argument(const char* key, const std::string& problem) const {
  fail(ErrorCode::InvalidArgument, where_ + ": argument \"" + key + "\" " + problem);
}

const nlohmann::json& LayerArgs::take(const char* key) {
  used_.insert(key);
  return layer_.at(key);
}

const nlohmann::json& LayerArgs::raw(const char* key) { return take(key); }

int64_t LayerArgs::to_int(const char* key, const nlohmann::json& value, int64_t min_value) const {
  if (!value.is_number_integer()) fail_argument(key, "must be an integer, got " + value.dump());
  int64_t v = value.get<int64_t>();
  if (v < min_value) fail_argument(key, "must be >= " + std::to_string(min_value) + ", got " + std::to_string(v));
  return v;
}

int64_t LayerArgs::required_int(const char* key, int64_t min_value) {
  if (!has(key)) fail(ErrorCode::InvalidArgument, where_ + ": missing required argument \"" + key + "\"");
  return to_int(key, take(key), min_value);
}

int64_t LayerArgs::int_or(const char* key, int64_t fallback, int64_t min_value) {
  return has(key) ? to_int(key, take(key), min_value) : fallback;
}

std::optional<int64_t> LayerArgs::optional_int(const char* key, int64_t min_value) {
  if (!has(key) || layer_.at(key).is_null()) {
    used_.insert(key);
    return std::nullopt;
  }
  return to_int(key, take(key), min_value);
}

double LayerArgs::double_or(const char* key, double fallback, double min_value, double max_value) {
  if (!has(key)) return fallback;
  const auto& value = take(key);
  if (!value.is_number()) fail_argument(key, "must be a number, got " + value.dump());
  double v = value.get<double>();
  if (!std::isfinite(v) || v < min_value || v > max_value) {
    fail_argument(key, "must be in [" + std::to_string(min_value) + ", " + std::to_string(max_value) + "], got " +
                           value.dump());
  }
  return v;
}

bool LayerArgs::bool_or(const char* key, bool fallback) {
  if (!has(key)) return fallback;
  const auto& value = take(key);
  if (!value.is_boolean()) fail_argument(key, "must be true or false, got " + value.dump());
  return value.get<bool>();
}

std::string LayerArgs::string_or(const char* key, const std::string& fallback, const std::vector<std::string>& allowed) {
  if (!has(key)) return fallback;
  const auto& value = take(key);
  std::string options;
  for (const auto& a : allowed) options += (options.empty() ? "\"" : ", \"") + a + "\"";
  if (!value.is_string()) fail_argument(key, "must be one of " + options + ", got " + value.dump());
  std::string v = value.get<std::string>();
  for (const auto& a : allowed) {
    if (a == v) return v;
  }
  fail_argument(key, "must be one of " + options + ", got \"" + v + "\"");
}

std::array<int64_t, 2> LayerArgs::required_pair(const char* key, int64_t min_value) {
  if (!has(key)) fail(ErrorCode::InvalidArgument, where_ + ": missing required argument \"" + key + "\"");
  return pair_or(key, {0, 0}, min_value);
}

std::array<int64_t, 2> LayerArgs::pair_or(const char* key, std::array<int64_t, 2> fallback, int64_t min_value) {
  if (!has(key)) return fallback;
  const auto& value = take(key);
  if (value.is_array()) {
    if (value.size() != 2) fail_argument(key, "must be an integer or a list of 2 integers, got " + value.dump());
    return {to_int(key, value[0], min_value), to_int(key, value[1], min_value)};
  }
  int64_t v = to_int(key, value, min_value);
  return {v, v};
}

std::vector<int64_t> LayerArgs::required_int_list(const char* key) {
  if (!has(key)) fail(ErrorCode::InvalidArgument, where_ + ": missing required argument \"" + key + "\"");
  const auto& value = take(key);
  if (!value.is_array()) return {to_int(key, value, 1)};
  if (value.empty()) fail_argument(key, "must not be empty");
  std::vector<int64_t> out;
  for (const auto& item : value) out.push_back(to_int(key, item, 1));
  return out;
}

void LayerArgs::reject_unknown_keys() const {
  for (const auto& item : layer_.items()) {
    if (!used_.count(item.key())) fail(ErrorCode::InvalidArgument, where_ + ": unknown argument \"" + item.key() + "\"");
  }
}

}  // namespace accel::detail
