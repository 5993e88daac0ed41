#include "tracking/mlflow_rest_api.hpp"

#include <algorithm>
#include <cmath>
#include <random>
#include <thread>

#include "accel/error.hpp"
#include "tracking/mlflow_common.hpp"

namespace accel::detail {
namespace {

double env_number(const char* name, double fallback) {
  const std::string text = env_or_empty(name);
  if (text.empty()) return fallback;
  size_t used = 0;
  double value = -1;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  require_arg(used == text.size() && std::isfinite(value) && value >= 0,
              std::string(name) + "='" + text + "' is not a number >= 0");
  return value;
}

HttpOptions options_from_env() {
  HttpOptions options;
  const std::string token = env_or_empty("MLFLOW_TRACKING_TOKEN");
  if (!token.empty()) options.headers.push_back("Authorization: Bearer " + token);
  options.username = env_or_empty("MLFLOW_TRACKING_USERNAME");
  options.password = env_or_empty("MLFLOW_TRACKING_PASSWORD");
  options.ca_file = env_or_empty("MLFLOW_TRACKING_SERVER_CERT_PATH");
  std::string insecure = env_or_empty("MLFLOW_TRACKING_INSECURE_TLS");
  std::transform(insecure.begin(), insecure.end(), insecure.begin(), [](unsigned char c) { return std::tolower(c); });
  options.insecure = insecure == "true" || insecure == "1";
  return options;
}

// urllib3's rule, which MLflow's client uses: retry when no answer came, on
// 429 (too many requests) and on the 5xx a restarting or overloaded server gives.
bool retryable(long status) { return status == 0 || status == 429 || (status >= 500 && status <= 599); }

}  // namespace

MlflowRetryPolicy MlflowRetryPolicy::from_env() {
  MlflowRetryPolicy policy;
  policy.max_retries =
      static_cast<int>(std::min(100.0, env_number("MLFLOW_HTTP_REQUEST_MAX_RETRIES", policy.max_retries)));
  policy.backoff_factor = std::min(120.0, env_number("MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR", policy.backoff_factor));
  policy.backoff_jitter = env_number("MLFLOW_HTTP_REQUEST_BACKOFF_JITTER", policy.backoff_jitter);
  policy.request_timeout_s = env_number("MLFLOW_HTTP_REQUEST_TIMEOUT", policy.request_timeout_s);
  require_arg(policy.request_timeout_s > 0, "MLFLOW_HTTP_REQUEST_TIMEOUT must be > 0");
  return policy;
}

std::string MlflowReply::error_code() const {
  if (body.is_object() && body.contains("error_code") && body["error_code"].is_string())
    return body["error_code"].get<std::string>();
  return "";
}

MlflowRestApi::MlflowRestApi(const std::string& tracking_uri)
    : uri_(tracking_uri), policy_(MlflowRetryPolicy::from_env()), http_(options_from_env()) {
  while (!uri_.empty() && uri_.back() == '/') uri_.pop_back();
}

MlflowReply MlflowRestApi::call(const std::string& endpoint, const nlohmann::json* post_body, const std::string& query,
                                const std::function<SteadyClock::time_point()>& deadline,
                                const std::function<void(SteadyClock::time_point)>& sleep) {
  const std::string url = uri_ + "/api/2.0/mlflow/" + endpoint + (query.empty() ? "" : "?" + query);
  // Invalid UTF-8 in a user's string must not throw on the worker thread: it is replaced.
  const std::string body =
      post_body ? post_body->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) : std::string();
  std::mt19937 rng(std::random_device{}());
  MlflowReply reply;
  for (int attempt = 0;; ++attempt) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline() - SteadyClock::now()).count();
    const long timeout_ms =
        static_cast<long>(std::min<double>(policy_.request_timeout_s * 1000.0, std::max<int64_t>(left, 1)));
    // end_training's deadline may arrive while a request waits on a silent server.
    HttpResponse response = http_.request(url, post_body != nullptr, body, timeout_ms,
                                          [&deadline] { return SteadyClock::now() >= deadline(); });
    reply.status = response.status;
    reply.body = nlohmann::json::parse(response.body, nullptr, false);
    if (reply.body.is_discarded()) reply.body = nullptr;
    if (reply.ok()) {
      reply.problem.clear();
      return reply;
    }
    if (response.status == 0) {
      reply.problem = "no answer (" + response.error + ")";
    } else {
      std::string message =
          reply.body.is_object() && reply.body.contains("message") && reply.body["message"].is_string()
              ? reply.body["message"].get<std::string>()
              : response.body.substr(0, 200);
      reply.problem = "HTTP " + std::to_string(response.status) + (message.empty() ? "" : " (" + message + ")");
    }
    if (!retryable(response.status) || attempt >= policy_.max_retries) return reply;
    const double seconds = std::min(120.0, policy_.backoff_factor * std::pow(2.0, attempt)) +
                           std::uniform_real_distribution<double>(0.0, policy_.backoff_jitter)(rng);
    const auto wake = SteadyClock::now() + std::chrono::microseconds(static_cast<int64_t>(seconds * 1e6));
    if (wake >= deadline()) return reply;  // no time left for another attempt
    sleep(wake);
    if (SteadyClock::now() >= deadline()) return reply;
  }
}

MlflowReply MlflowRestApi::call_now(const std::string& endpoint, const nlohmann::json* post_body,
                                    const std::string& query, SteadyClock::time_point deadline) {
  return call(
      endpoint, post_body, query, [deadline] { return deadline; },
      [](SteadyClock::time_point until) { std::this_thread::sleep_until(until); });
}

}  // namespace accel::detail
