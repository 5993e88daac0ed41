// MLflow's REST API (/api/2.0/mlflow/...) with MLflow's own retry rules.
#pragma once

#include <chrono>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "tracking/http_client.hpp"

namespace accel::detail {

using SteadyClock = std::chrono::steady_clock;

// MLflow's client settings, read from the variables its Python client reads
// (MLFLOW_HTTP_REQUEST_MAX_RETRIES, _BACKOFF_FACTOR, _BACKOFF_JITTER, _TIMEOUT),
// with the same defaults: 5 retries, sleeps of factor * 2^n (+ up to jitter)
// seconds capped at 120, 120 s per request.
struct MlflowRetryPolicy {
  int max_retries = 5;
  double backoff_factor = 2.0;
  double backoff_jitter = 1.0;
  double request_timeout_s = 120.0;
  // Throws InvalidArgument naming a variable whose value is not a number >= 0.
  static MlflowRetryPolicy from_env();
};

struct MlflowReply {
  long status = 0;      // the last HTTP status; 0 when the server never answered
  nlohmann::json body;  // the answer parsed as JSON (null when it was not JSON)
  std::string problem;  // "HTTP 503 (message)" or "no answer (Failed to connect ...)"
  bool ok() const { return status == 200; }
  // MLflow's error_code ("RESOURCE_DOES_NOT_EXIST"), empty when none.
  std::string error_code() const;
};

class MlflowRestApi {
 public:
  // tracking_uri: http(s)://host[:port][/prefix]. Authentication as MLflow's
  // client: MLFLOW_TRACKING_TOKEN (bearer), MLFLOW_TRACKING_USERNAME/_PASSWORD
  // (basic), MLFLOW_TRACKING_SERVER_CERT_PATH, MLFLOW_TRACKING_INSECURE_TLS=true.
  explicit MlflowRestApi(const std::string& tracking_uri);
  const std::string& uri() const { return uri_; }
  const MlflowRetryPolicy& policy() const { return policy_; }

  // POSTs post_body (or, when it is null, GETs with query) to the endpoint
  // ("runs/log-batch"), retrying connection errors, 429 and 5xx with
  // exponential backoff while retries are left and deadline() is ahead.
  // sleep(until) waits between attempts; it may return early, and the call
  // then checks deadline() again. Never throws for network failures.
  MlflowReply call(const std::string& endpoint, const nlohmann::json* post_body, const std::string& query,
                   const std::function<SteadyClock::time_point()>& deadline,
                   const std::function<void(SteadyClock::time_point)>& sleep);
  // call() with a fixed deadline and a plain sleep: for the calling thread.
  MlflowReply call_now(const std::string& endpoint, const nlohmann::json* post_body, const std::string& query,
                       SteadyClock::time_point deadline);
  std::string escape(const std::string& text) { return http_.escape(text); }

 private:
  std::string uri_;
  MlflowRetryPolicy policy_;
  HttpClient http_;
};

}  // namespace accel::detail
