// The mlflow tracker when MLFLOW_TRACKING_URI is http(s)://: a client of an
// MLflow tracking server's REST API. init_trackers finds or creates the
// experiment and the run on the calling thread (so a wrong URL fails there);
// log() only queues, and a worker thread sends the queue as runs/log-batch
// requests, retrying as MLflow's client does. end_training flushes within
// ACCEL_MLFLOW_FLUSH_TIMEOUT and marks the run FINISHED, or FAILED when values
// were lost, and then fails naming the URL and the server's answer.
#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <initializer_list>
#include <mutex>
#include <thread>
#include <vector>

#include "accel/error.hpp"
#include "tracking/mlflow_common.hpp"
#include "tracking/mlflow_rest_api.hpp"
#include "tracking/warn.hpp"

namespace accel::detail {
namespace {

using json = nlohmann::json;

struct Metric {
  std::string key;
  double value;
  int64_t timestamp, step;
};
struct KeyValue {
  std::string key, value;
};

void warn(const std::string& message) { detail::warn("accel.mlflow", message); }

size_t env_count(const char* name, size_t fallback) {
  const std::string text = env_or_empty(name);
  if (text.empty()) return fallback;
  require_arg(text.find_first_not_of("0123456789") == std::string::npos && text.size() < 10 && std::stoul(text) > 0,
              std::string(name) + "='" + text + "' is not a positive integer");
  return std::stoul(text);
}

// JSON has no NaN or infinity; MLflow's server reads these spellings for doubles (proto3 JSON).
json metric_value(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "Infinity" : "-Infinity";
  return value;
}

json key_values(const std::vector<KeyValue>& items) {
  json out = json::array();
  for (const auto& item : items) out.push_back({{"key", item.key}, {"value", item.value}});
  return out;
}

class MlflowRestTracker : public Tracker {
 public:
  MlflowRestTracker(const std::string& uri, MlflowRunOptions options)
      : api_(uri),
        flush_timeout_(std::chrono::seconds(env_count("ACCEL_MLFLOW_FLUSH_TIMEOUT", 60))),
        capacity_(env_count("ACCEL_MLFLOW_QUEUE_SIZE", 100000)),
        options_(std::move(options)) {}
  ~MlflowRestTracker() override { stop(SteadyClock::now()); }
  std::string name() const override { return "mlflow"; }

  void init(const std::string& project_name, const TrackerConfig& config) override {
    require(!worker_.joinable(), ErrorCode::State, "mlflow: init called twice");
    // Everything the caller gave is checked before the server is asked anything.
    std::vector<KeyValue> params, tags;
    for (const auto& [key, value] : config) {
      mlflow_check_key(key);
      std::string text = mlflow_param_text(value);
      if (text.size() > kMlflowMaxParamValueLength) {  // Accelerate drops these, with a warning
        warn("mlflow: dropped param '" + key + "': its value has " + std::to_string(text.size()) +
             " characters, MLflow accepts at most " + std::to_string(kMlflowMaxParamValueLength));
        continue;
      }
      params.push_back({key, std::move(text)});
    }
    const std::string run_name = options_.run_name.empty() ? project_name : options_.run_name;
    for (const auto& [key, value] : mlflow_run_tags(options_)) tags.push_back({key, value});
    // Bounded by MLflow's retry settings alone, as MLflow's own client is: a
    // slow first answer (a server creating its tables) must not fail the run.
    const auto deadline = SteadyClock::time_point::max();
    const std::string& resume_id = options_.run_id;
    if (resume_id.empty()) {
      const std::string experiment_id = find_or_create_experiment(mlflow_experiment_name(project_name), deadline);
      json tag_list = key_values(tags);
      tag_list.push_back({{"key", "mlflow.runName"}, {"value", run_name}});
      const std::string user = env_or_empty("USER");
      tag_list.push_back({{"key", "mlflow.user"}, {"value", user.empty() ? "libaccel" : user}});
      json body = {{"experiment_id", experiment_id},
                   {"run_name", run_name},
                   {"start_time", mlflow_now_ms()},
                   {"user_id", user.empty() ? "libaccel" : user},
                   {"tags", tag_list}};
      const MlflowReply reply = api_.call_now("runs/create", &body, "", deadline);
      expect(reply, "could not create a run in experiment " + experiment_id);
      run_id_ = field(reply, {"run", "info", "run_id"}, "runs/create");
    } else {
      // As mlflow.start_run(run_id=...): log into the existing run, RUNNING again.
      const MlflowReply found = api_.call_now("runs/get", nullptr, "run_id=" + api_.escape(resume_id), deadline);
      if (found.error_code() == "RESOURCE_DOES_NOT_EXIST")
        fail(ErrorCode::InvalidArgument,
             "run_id '" + resume_id + "' (MLFLOW_RUN_ID or init_kwargs): no such run on " + api_.uri());
      expect(found, "could not read run '" + resume_id + "' (MLFLOW_RUN_ID or init_kwargs run_id)");
      json body = {{"run_id", resume_id}, {"status", "RUNNING"}};
      expect(api_.call_now("runs/update", &body, "", deadline), "could not resume run '" + resume_id + "'");
      run_id_ = resume_id;
      // As mlflow.start_run(run_id=..., tags=..., description=...): the tags and the
      // description are set on the resumed run; its name stays.
      tags_.assign(tags.begin(), tags.end());
    }
    params_.assign(params.begin(), params.end());
    worker_ = std::thread([this] { send_loop(); });
  }

  void log(const Scalars& values, std::optional<int64_t> step) override {
    for (const auto& entry : values) mlflow_check_key(entry.first);  // a bad name would fail its whole batch
    const int64_t now = mlflow_now_ms();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (metrics_.size() + values.size() > capacity_) {
        // The server is far behind or gone: drop rather than stall the training step.
        lost_metrics_ += values.size();
        last_problem_ = "the queue was full";
        if (!queue_full_warned_)
          warn("mlflow: " + api_.uri() + " is not keeping up; the queue holds " + std::to_string(capacity_) +
               " metrics (ACCEL_MLFLOW_QUEUE_SIZE) and new ones are dropped until it drains");
        queue_full_warned_ = true;
        return;
      }
      for (const auto& [key, value] : values) metrics_.push_back({key, value, now, step.value_or(0)});
    }
    wake_.notify_all();
  }

  void finish() override {
    if (!worker_.joinable()) return;
    stop(SteadyClock::now() + flush_timeout_);
    const bool lost = lost_metrics_ + lost_params_ + lost_tags_ > 0;
    json body = {{"run_id", run_id_}, {"status", lost ? "FAILED" : "FINISHED"}, {"end_time", mlflow_now_ms()}};
    // The status update gets a few seconds of its own even when the flush used up its time.
    const MlflowReply update = api_.call_now("runs/update", &body, "", SteadyClock::now() + std::chrono::seconds(10));
    std::string message;
    if (lost)
      message = "mlflow: " + std::to_string(lost_metrics_) + " metrics, " + std::to_string(lost_params_) +
                " params and " + std::to_string(lost_tags_) + " tags of run " + run_id_ + " were not recorded by " +
                api_.uri() + " (last answer: " + last_problem_ + ")";
    if (!update.ok())
      message += std::string(message.empty() ? "mlflow:" : ";") + " could not mark run " + run_id_ +
                 (lost ? " FAILED" : " FINISHED") + " on " + api_.uri() + ": " + update.problem;
    if (message.empty()) return;
    warn(message);
    fail(ErrorCode::IO, message);
  }

 private:
  // The string at path in a successful answer; IO naming the URL when the answer has another shape.
  std::string field(const MlflowReply& reply, std::initializer_list<const char*> path, const std::string& what) {
    const json* node = &reply.body;
    for (const char* key : path) {
      if (!node->is_object() || !node->contains(key)) node = nullptr;
      if (node == nullptr) break;
      node = &(*node)[key];
    }
    require(node != nullptr && node->is_string(), ErrorCode::IO,
            "mlflow: unexpected answer from " + api_.uri() + " to " + what + ": " +
                reply.body.dump(-1, ' ', false, json::error_handler_t::replace).substr(0, 200));
    return node->get<std::string>();
  }

  void expect(const MlflowReply& reply, const std::string& what) {
    require(reply.ok(), ErrorCode::IO, "mlflow: " + what + " on " + api_.uri() + ": " + reply.problem);
  }

  std::string find_or_create_experiment(const std::string& name, SteadyClock::time_point deadline) {
    for (int round = 0; round < 2; ++round) {
      const MlflowReply found =
          api_.call_now("experiments/get-by-name", nullptr, "experiment_name=" + api_.escape(name), deadline);
      if (found.ok()) {
        const std::string id = field(found, {"experiment", "experiment_id"}, "experiments/get-by-name");
        require(field(found, {"experiment", "lifecycle_stage"}, "experiments/get-by-name") == "active",
                ErrorCode::InvalidArgument,
                "mlflow: experiment '" + name + "' on " + api_.uri() +
                    " is deleted; restore it or choose another name (MLFLOW_EXPERIMENT_NAME)");
        return id;
      }
      if (found.error_code() != "RESOURCE_DOES_NOT_EXIST") expect(found, "could not look up experiment '" + name + "'");
      json body = {{"name", name}};
      const MlflowReply created = api_.call_now("experiments/create", &body, "", deadline);
      if (created.ok()) return field(created, {"experiment_id"}, "experiments/create");
      // Another process created it between our two calls: look it up again.
      if (created.error_code() != "RESOURCE_ALREADY_EXISTS")
        expect(created, "could not create experiment '" + name + "'");
    }
    fail(ErrorCode::IO, "mlflow: experiment '" + name + "' on " + api_.uri() + " could be neither found nor created");
  }

  // Ends the worker: it sends what is queued until `deadline`, then drops the rest.
  void stop(SteadyClock::time_point deadline) {
    if (!worker_.joinable()) return;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
      deadline_ = std::min(deadline_, deadline);
    }
    wake_.notify_all();
    worker_.join();
  }

  void send_loop() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      wake_.wait(lock, [this] { return stopping_ || !metrics_.empty() || !params_.empty() || !tags_.empty(); });
      if (metrics_.empty() && params_.empty() && tags_.empty()) return;
      if (SteadyClock::now() >= deadline_) {
        lose(metrics_.size(), params_.size(), tags_.size(), "flush timed out (ACCEL_MLFLOW_FLUSH_TIMEOUT)");
        metrics_.clear(), params_.clear(), tags_.clear();
        return;
      }
      // One request holds what the queue has, within log-batch's limits. Params
      // and tags go without metrics: a param the server refuses (a resumed run
      // with another value) fails its whole request, and must not take metrics with it.
      std::vector<KeyValue> params, tags;
      while (!params_.empty() && params.size() < kMlflowMaxParamsTagsPerBatch)
        params.push_back(params_.front()), params_.pop_front();
      while (!tags_.empty() && tags.size() < kMlflowMaxParamsTagsPerBatch)
        tags.push_back(tags_.front()), tags_.pop_front();
      const size_t room = params.empty() && tags.empty() ? kMlflowMaxMetricsPerBatch : 0;
      json metrics = json::array();
      for (; !metrics_.empty() && metrics.size() < room; metrics_.pop_front()) {
        const Metric& m = metrics_.front();
        metrics.push_back(
            {{"key", m.key}, {"value", metric_value(m.value)}, {"timestamp", m.timestamp}, {"step", m.step}});
      }
      lock.unlock();
      const json body = {
          {"run_id", run_id_}, {"metrics", metrics}, {"params", key_values(params)}, {"tags", key_values(tags)}};
      MlflowReply reply;
      try {
        reply = api_.call(
            "runs/log-batch", &body, "",
            [this] {
              std::lock_guard<std::mutex> guard(mutex_);
              return deadline_;
            },
            [this](SteadyClock::time_point until) {
              std::unique_lock<std::mutex> guard(mutex_);
              wake_.wait_until(guard, until, [&] { return deadline_ < until; });  // end_training cuts the backoff short
            });
      } catch (const std::exception& e) {  // nothing may escape a thread: count the batch as lost
        reply.problem = e.what();
      }
      lock.lock();
      // A request still in flight at the flush deadline is cut off by it (its
      // timeout is trimmed to the deadline): say so, or the user sees only curl's timeout.
      if (!reply.ok())
        lose(metrics.size(), params.size(), tags.size(),
             SteadyClock::now() >= deadline_ ? "flush timed out (ACCEL_MLFLOW_FLUSH_TIMEOUT): " + reply.problem
                                             : reply.problem);
    }
  }

  void lose(size_t metrics, size_t params, size_t tags, const std::string& problem) {
    lost_metrics_ += metrics, lost_params_ += params, lost_tags_ += tags;
    last_problem_ = problem;
    warn("mlflow: lost " + std::to_string(metrics) + " metrics, " + std::to_string(params) + " params and " +
         std::to_string(tags) + " tags of run " + run_id_ + " on " + api_.uri() + ": " + problem);
  }

  MlflowRestApi api_;
  const std::chrono::seconds flush_timeout_;
  const size_t capacity_;
  const MlflowRunOptions options_;
  std::string run_id_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Metric> metrics_;
  std::deque<KeyValue> params_, tags_;
  bool stopping_ = false, queue_full_warned_ = false;
  SteadyClock::time_point deadline_ = SteadyClock::time_point::max();
  size_t lost_metrics_ = 0, lost_params_ = 0, lost_tags_ = 0;
  std::string last_problem_;
  std::thread worker_;  // last: it starts after every member it uses exists
};

}  // namespace

std::unique_ptr<Tracker> make_mlflow_rest_tracker(const std::string& tracking_uri, MlflowRunOptions options) {
  return std::make_unique<MlflowRestTracker>(tracking_uri, std::move(options));
}

}  // namespace accel::detail
