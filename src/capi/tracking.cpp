// C ABI over Accelerator's tracking calls; custom trackers wrap C callbacks.
#include <nlohmann/json.hpp>

#include "accel/accel_tracking.h"
#include "capi/handles.hpp"
#include "core/json.hpp"

namespace {

using accel::ErrorCode;

class CallbackTracker : public accel::Tracker {
 public:
  explicit CallbackTracker(const accel_tracker_callbacks& callbacks) : callbacks_(callbacks), name_(callbacks.name) {}
  std::string name() const override { return name_; }
  void init(const std::string& run_name, const accel::TrackerConfig& config) override {
    nlohmann::json json = nlohmann::json::object();
    for (const auto& [key, value] : config) std::visit([&, &k = key](const auto& v) { json[k] = v; }, value);
    if (!callbacks_.init) return;
    accel_set_error("");
    check("init", callbacks_.init(callbacks_.user, run_name.c_str(), json.dump().c_str()));
  }
  void log(const accel::Scalars& values, std::optional<int64_t> step) override {
    if (!callbacks_.log) return;
    std::vector<const char*> names;
    std::vector<double> numbers;
    for (const auto& [key, value] : values) {
      names.push_back(key.c_str());
      numbers.push_back(value);
    }
    accel_set_error("");
    check("log", callbacks_.log(callbacks_.user, names.data(), numbers.data(), names.size(), step.value_or(0),
                                step.has_value() ? 1 : 0));
  }
  void finish() override {
    if (!callbacks_.finish) return;
    accel_set_error("");
    check("finish", callbacks_.finish(callbacks_.user));
  }

 private:
  // The callback's own message (accel_set_error) reaches the caller.
  void check(const char* what, const accel_status& status) const {
    accel::capi::check_callback(status, "tracker '" + name_ + "' " + what + " callback");
  }
  accel_tracker_callbacks callbacks_;
  std::string name_;
};

accel::TrackerConfig parse_config(const char* config_json) {
  accel::TrackerConfig config;
  if (config_json == nullptr) return config;
  const std::string text = config_json;
  const std::string label = "config_json \"" + (text.size() > 60 ? text.substr(0, 60) + "..." : text) + "\"";
  auto json = accel::detail::parse_json(text, label, ErrorCode::InvalidArgument);
  accel::require_arg(json.is_object(), "config_json is not a JSON object: " + accel::detail::describe_json(json));
  for (const auto& [key, value] : json.items()) {
    if (value.is_number())
      config[key] = value.get<double>();
    else if (value.is_boolean())
      config[key] = value.get<bool>() ? 1.0 : 0.0;
    else if (value.is_string())
      config[key] = value.get<std::string>();
    else
      accel::fail(ErrorCode::InvalidArgument, "config_json: value of '" + key +
                                                  "' must be a number, string or boolean, got " +
                                                  accel::detail::describe_json(value));
  }
  return config;
}

std::optional<int64_t> optional_step(int64_t step) { return step < 0 ? std::nullopt : std::optional<int64_t>(step); }

accel::Scalars scalars_of(const char* const* names, const double* values, size_t count) {
  accel::require_arg(count == 0 || (names != nullptr && values != nullptr),
                     "names or values is NULL with count " + std::to_string(count));
  accel::Scalars scalars;
  for (size_t i = 0; i < count; ++i) {
    accel::require_arg(names[i] != nullptr, "names[" + std::to_string(i) + "] is NULL");
    scalars[names[i]] = values[i];
  }
  return scalars;
}

}  // namespace

using namespace accel::capi;
using accel::require_arg;

extern "C" {

void accel_tracker_callbacks_init(accel_tracker_callbacks* callbacks) {
  if (callbacks == nullptr) return;
  *callbacks = accel_tracker_callbacks{};
  callbacks->struct_size = sizeof(accel_tracker_callbacks);
}

accel_status accel_accelerator_add_tracker(accel_accelerator* acc, const accel_tracker_callbacks* callbacks) {
  return guarded([&] {
    auto& accelerator = *deref(acc, "acc").accelerator;
    require_arg(callbacks != nullptr, "callbacks is NULL");
    auto merged = read_options(callbacks, "callbacks", accel_tracker_callbacks_init);
    require_arg(merged.name != nullptr && merged.name[0] != '\0', "callbacks->name is NULL or empty");
    accelerator.add_tracker(std::make_shared<CallbackTracker>(merged));
  });
}

accel_status accel_accelerator_init_trackers(accel_accelerator* acc, const char* project_name,
                                             const char* config_json) {
  return guarded([&] {
    auto& accelerator = *deref(acc, "acc").accelerator;
    require_arg(project_name != nullptr, "project_name is NULL");
    accelerator.init_trackers(project_name, parse_config(config_json));
  });
}

accel_status accel_accelerator_init_trackers_with(accel_accelerator* acc, const char* project_name,
                                                  const char* config_json, const char* init_kwargs_json) {
  return guarded([&] {
    auto& accelerator = *deref(acc, "acc").accelerator;
    require_arg(project_name != nullptr, "project_name is NULL");
    accelerator.init_trackers(project_name, parse_config(config_json), init_kwargs_json ? init_kwargs_json : "");
  });
}

accel_status accel_accelerator_log(accel_accelerator* acc, const char* const* names, const double* values, size_t count,
                                   int64_t step) {
  return guarded([&] {
    auto& accelerator = *deref(acc, "acc").accelerator;
    accelerator.log(scalars_of(names, values, count), optional_step(step));
  });
}

accel_status accel_accelerator_log_to(accel_accelerator* acc, const char* tracker, const char* const* names,
                                      const double* values, size_t count, int64_t step) {
  return guarded([&] {
    auto& accelerator = *deref(acc, "acc").accelerator;
    require_arg(tracker != nullptr, "tracker is NULL");
    accelerator.log_to(tracker, scalars_of(names, values, count), optional_step(step));
  });
}

accel_status accel_accelerator_log_text(accel_accelerator* acc, const char* tag, const char* text, int64_t step) {
  return guarded([&] {
    auto& accelerator = *deref(acc, "acc").accelerator;
    require_arg(tag != nullptr && text != nullptr, "tag or text is NULL");
    accelerator.log_text(tag, text, optional_step(step));
  });
}

accel_status accel_accelerator_log_text_to(accel_accelerator* acc, const char* tracker, const char* tag,
                                           const char* text, int64_t step) {
  return guarded([&] {
    auto& accelerator = *deref(acc, "acc").accelerator;
    require_arg(tracker != nullptr && tag != nullptr && text != nullptr, "tracker, tag or text is NULL");
    accelerator.log_text_to(tracker, tag, text, optional_step(step));
  });
}

const char* accel_builtin_tracker_names(void) {
  // Built once from the core's list; never throws past here (a failure leaves it empty).
  static const std::string names = [] {
    std::string joined;
    try {
      for (const auto& name : accel::builtin_tracker_names()) joined += (joined.empty() ? "" : ",") + name;
    } catch (...) {
      joined.clear();
    }
    return joined;
  }();
  return names.c_str();
}

accel_status accel_accelerator_has_tracker(const accel_accelerator* acc, const char* name, int* out) {
  return guarded([&] {
    auto& accelerator = *deref(acc, "acc").accelerator;
    require_arg(name != nullptr, "name is NULL");
    out_param(out, "out") = accelerator.get_tracker(name) != nullptr ? 1 : 0;
  });
}

accel_status accel_accelerator_end_training(accel_accelerator* acc) {
  return guarded([&] { deref(acc, "acc").accelerator->end_training(); });
}

}  // extern "C"
