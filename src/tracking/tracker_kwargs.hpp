// One built-in tracker's init_kwargs (Accelerate's init_trackers(init_kwargs=
// {"wandb": {...}})): typed reads, and an error naming any key left unread,
// so a misspelt option fails init_trackers instead of being ignored.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "accel/error.hpp"
#include "core/json.hpp"

namespace accel::detail {

class TrackerKwargs {
 public:
  TrackerKwargs(std::string tracker, nlohmann::json kwargs) : tracker_(std::move(tracker)), kwargs_(std::move(kwargs)) {
    if (kwargs_.is_null()) kwargs_ = nlohmann::json::object();
    require_arg(kwargs_.is_object(),
                "init_kwargs[\"" + tracker_ + "\"] must be a JSON object, not " + describe_json(kwargs_));
  }

  std::optional<std::string> string(const std::string& key) {
    const auto* value = find(key);
    if (!value) return std::nullopt;
    require_arg(value->is_string(), where(key) + " must be a string, not " + describe_json(*value));
    return value->get<std::string>();
  }

  // A number at least `minimum`.
  std::optional<double> number(const std::string& key, double minimum) {
    const auto* value = find(key);
    if (!value) return std::nullopt;
    require_arg(value->is_number() && value->get<double>() >= minimum,
                where(key) + " must be a number >= " + describe_json(minimum) + ", not " + describe_json(*value));
    return value->get<double>();
  }

  // A whole number at least `minimum`.
  std::optional<int64_t> integer(const std::string& key, int64_t minimum) {
    const auto* value = find(key);
    if (!value) return std::nullopt;
    require_arg(
        value->is_number_integer() && value->get<int64_t>() >= minimum,
        where(key) + " must be a whole number >= " + std::to_string(minimum) + ", not " + describe_json(*value));
    return value->get<int64_t>();
  }

  // A list of strings (wandb's tags); a single string is a list of one.
  std::vector<std::string> strings(const std::string& key) {
    const auto* value = find(key);
    if (!value) return {};
    if (value->is_string()) return {value->get<std::string>()};
    require_arg(value->is_array(), where(key) + " must be a list of strings, not " + describe_json(*value));
    std::vector<std::string> out;
    for (const auto& item : *value) {
      require_arg(item.is_string(), where(key) + " must hold strings only, not " + describe_json(item));
      out.push_back(item.get<std::string>());
    }
    return out;
  }

  // A JSON object, or a string holding one (Accelerate's MLflow tags: a dict or its json.dumps).
  std::optional<nlohmann::json> object(const std::string& key) {
    const auto* value = find(key);
    if (!value) return std::nullopt;
    nlohmann::json parsed =
        value->is_string() ? nlohmann::json::parse(value->get<std::string>(), nullptr, false) : *value;
    require_arg(parsed.is_object(),
                where(key) + " must be an object (or a JSON text of one), not " + describe_json(*value));
    return parsed;
  }

  // Throws InvalidArgument naming the first key no read asked for, listing the
  // keys that were asked for (the tracker's supported ones). Call after every read.
  void reject_unread() const {
    for (const auto& item : kwargs_.items()) {
      if (read_.count(item.key())) continue;
      std::string list;
      for (const auto& key : read_) list += (list.empty() ? "" : ", ") + key;
      fail(ErrorCode::InvalidArgument, "init_kwargs[\"" + tracker_ + "\"] has the unsupported key '" + item.key() +
                                           "' (" + (list.empty() ? "this tracker takes none" : "supported: " + list) +
                                           ")");
    }
  }

 private:
  const nlohmann::json* find(const std::string& key) {
    read_.insert(key);
    auto it = kwargs_.find(key);
    return it == kwargs_.end() || it->is_null() ? nullptr : &*it;
  }
  std::string where(const std::string& key) const { return "init_kwargs[\"" + tracker_ + "\"][\"" + key + "\"]"; }

  std::string tracker_;
  nlohmann::json kwargs_;
  std::set<std::string> read_;
};

}  // namespace accel::detail
