// Where the mlflow tracker logs (MLFLOW_TRACKING_URI) and what it refuses
// before any request; test_mlflow_server.py covers a real server.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "accel/accelerator.hpp"
#include "core/remove_tree.hpp"
#include "tracking/mlflow_common.hpp"

namespace {

namespace fs = std::filesystem;

// Sets an environment variable for one test and restores it afterwards.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    const char* old = std::getenv(name);
    had_ = old != nullptr;
    if (had_) old_ = old;
    ::setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() { had_ ? (void)::setenv(name_, old_.c_str(), 1) : (void)::unsetenv(name_); }

 private:
  const char* name_;
  bool had_ = false;
  std::string old_;
};

fs::path fresh_dir(const std::string& tag) {
  const fs::path dir = fs::temp_directory_path() / ("accel_mlflow_" + tag + "_" + std::to_string(::getpid()));
  accel::detail::remove_tree(dir);
  return dir;
}

accel::AcceleratorOptions mlflow_options(const fs::path& dir) {
  accel::AcceleratorOptions options;
  options.cpu = true;
  options.log_with = {"mlflow"};
  options.project.logging_dir = dir.string();
  return options;
}

template <typename Call>
accel::Error error_of(Call call) {
  try {
    call();
  } catch (const accel::Error& e) {
    return e;
  }
  return accel::Error(accel::ErrorCode::Internal, "no error");
}

// A port nothing listens on: bound, then released.
int closed_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address));
  socklen_t size = sizeof(address);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &size);
  ::close(fd);
  return ntohs(address.sin_port);
}

TEST(MlflowTarget, UnsupportedStoreFailsInitNamingItAndARetryWorks) {
  const fs::path dir = fresh_dir("sqlite");
  accel::Accelerator accelerator(mlflow_options(dir));
  {
    ScopedEnv uri("MLFLOW_TRACKING_URI", "sqlite:///runs.db");
    const accel::Error e = error_of([&] { accelerator.init_trackers("demo", {}); });
    EXPECT_EQ(e.code(), accel::ErrorCode::Unsupported) << e.what();
    EXPECT_NE(std::string(e.what()).find("'sqlite:///runs.db'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("mlflow server --backend-store-uri sqlite:///runs.db"), std::string::npos);
  }
  EXPECT_EQ(accelerator.get_tracker("mlflow"), nullptr);
  // Nothing was committed: the same Accelerator starts its trackers once the variable is fixed.
  ::unsetenv("MLFLOW_TRACKING_URI");
  accelerator.init_trackers("demo", {{"lr", 0.5}});
  EXPECT_NE(accelerator.get_tracker("mlflow"), nullptr);
  accelerator.end_training();
  EXPECT_TRUE(fs::exists(dir / "mlruns"));
  accel::detail::remove_tree(dir);
}

TEST(MlflowTarget, FileUriAndExperimentNameFromTheEnvironment) {
  const fs::path dir = fresh_dir("file");
  const fs::path store = dir / "elsewhere";
  ScopedEnv uri("MLFLOW_TRACKING_URI", "file://" + store.string());
  ScopedEnv name("MLFLOW_EXPERIMENT_NAME", "team experiment");
  accel::Accelerator accelerator(mlflow_options(dir));
  accelerator.init_trackers("demo", {{"lr", 0.5}});
  accelerator.log({{"loss", 1.0}}, 2);
  accelerator.end_training();
  EXPECT_FALSE(fs::exists(dir / "mlruns"));
  ASSERT_TRUE(fs::exists(store / "1" / "meta.yaml"));
  std::ifstream meta(store / "1" / "meta.yaml");
  const std::string text((std::istreambuf_iterator<char>(meta)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("name: 'team experiment'"), std::string::npos) << text;
  accel::detail::remove_tree(dir);
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// Accelerate's MLflowTracker keywords: init_kwargs {"mlflow": {...}}.
TEST(MlflowTarget, InitKwargsNameDescribeAndTagTheRun) {
  const fs::path dir = fresh_dir("kwargs");
  accel::Accelerator accelerator(mlflow_options(dir));
  const accel::Error bad =
      error_of([&] { accelerator.init_trackers("demo", {}, R"({"mlflow": {"nested_run": true}})"); });
  EXPECT_EQ(bad.code(), accel::ErrorCode::InvalidArgument);
  EXPECT_NE(std::string(bad.what()).find("'nested_run' (supported: description, run_id, run_name, tags)"),
            std::string::npos)
      << bad.what();
  const accel::Error tag = error_of([&] { accelerator.init_trackers("demo", {}, R"({"mlflow": {"tags": [1]}})"); });
  EXPECT_NE(std::string(tag.what()).find(R"(init_kwargs["mlflow"]["tags"] must be an object)"), std::string::npos)
      << tag.what();
  accelerator.init_trackers(
      "demo", {},
      R"({"mlflow": {"run_name": "baseline", "description": "first try", "tags": "{\"team\": \"nlp\", \"n\": 3}"}})");
  accelerator.end_training();
  fs::path run;
  for (const auto& entry : fs::directory_iterator(dir / "mlruns" / "1"))
    if (entry.is_directory()) run = entry.path();
  ASSERT_FALSE(run.empty());
  EXPECT_EQ(read_text(run / "tags" / "mlflow.runName"), "baseline");
  EXPECT_EQ(read_text(run / "tags" / "mlflow.note.content"), "first try");
  EXPECT_EQ(read_text(run / "tags" / "team"), "nlp");
  EXPECT_EQ(read_text(run / "tags" / "n"), "3");
  EXPECT_NE(read_text(run / "meta.yaml").find("run_name: 'baseline'"), std::string::npos);
  EXPECT_NE(read_text(dir / "mlruns" / "1" / "meta.yaml").find("name: 'demo'"), std::string::npos);
  accel::detail::remove_tree(dir);
}

// MLFLOW_TAGS wins over init_kwargs' tags, as in Accelerate; the file store resumes no run.
TEST(MlflowTarget, VariablesWinAndTheFileStoreRefusesARunId) {
  const fs::path dir = fresh_dir("variables");
  {
    ScopedEnv tags("MLFLOW_TAGS", R"({"from": "env"})");
    accel::Accelerator accelerator(mlflow_options(dir));
    accelerator.init_trackers("demo", {}, R"({"mlflow": {"tags": {"from": "kwargs", "only": "kwargs"}}})");
    accelerator.end_training();
  }
  fs::path run;
  for (const auto& entry : fs::directory_iterator(dir / "mlruns" / "1"))
    if (entry.is_directory()) run = entry.path();
  EXPECT_EQ(read_text(run / "tags" / "from"), "env");
  EXPECT_FALSE(fs::exists(run / "tags" / "only"));
  accel::Accelerator accelerator(mlflow_options(dir));
  const accel::Error e = error_of([&] { accelerator.init_trackers("demo", {}, R"({"mlflow": {"run_id": "abc"}})"); });
  EXPECT_EQ(e.code(), accel::ErrorCode::Unsupported);
  EXPECT_NE(std::string(e.what()).find("logging into run 'abc'"), std::string::npos) << e.what();
  ScopedEnv run_id("MLFLOW_RUN_ID", "def");
  EXPECT_EQ(error_of([&] { accelerator.init_trackers("demo", {}); }).code(), accel::ErrorCode::Unsupported);
  accel::detail::remove_tree(dir);
}

TEST(MlflowTarget, BadRetrySettingIsNamed) {
  ScopedEnv uri("MLFLOW_TRACKING_URI", "http://127.0.0.1:1");
  ScopedEnv retries("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "many");
  accel::Accelerator accelerator(mlflow_options(fresh_dir("retries")));
  const accel::Error e = error_of([&] { accelerator.init_trackers("demo", {}); });
  EXPECT_EQ(e.code(), accel::ErrorCode::InvalidArgument);
  EXPECT_NE(std::string(e.what()).find("MLFLOW_HTTP_REQUEST_MAX_RETRIES='many'"), std::string::npos) << e.what();
}

// A refused init_trackers leaves the last dvclive run's files as they were,
// although dvclive comes first in log_with: it starts after every other tracker.
TEST(MlflowTarget, AFailedInitLeavesTheLastDvcliveRunInPlace) {
  const fs::path dir = fresh_dir("dvclive_kept");
  accel::AcceleratorOptions options = mlflow_options(dir);
  {
    options.log_with = {"dvclive"};
    accel::Accelerator first(options);
    first.init_trackers("demo", {{"lr", 0.5}});
    first.log({{"loss", 1.0}}, 0);
    first.end_training();
  }
  const fs::path params = dir / "dvclive" / "params.yaml", metrics = dir / "dvclive" / "plots" / "metrics" / "loss.tsv";
  ASSERT_TRUE(fs::exists(params) && fs::exists(metrics));
  ScopedEnv uri("MLFLOW_TRACKING_URI", "http://127.0.0.1:1");
  ScopedEnv retries("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "many");
  options.log_with = {"dvclive", "mlflow"};
  accel::Accelerator second(options);
  EXPECT_EQ(error_of([&] { second.init_trackers("demo", {{"lr", 0.1}}); }).code(), accel::ErrorCode::InvalidArgument);
  EXPECT_TRUE(fs::exists(params) && fs::exists(metrics)) << "the refused call removed the last run's files";
  accel::detail::remove_tree(dir);
}

TEST(MlflowTarget, UnreachableServerFailsInitNamingTheUrl) {
  const std::string url = "http://127.0.0.1:" + std::to_string(closed_port());
  ScopedEnv uri("MLFLOW_TRACKING_URI", url);
  ScopedEnv retries("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "2");
  ScopedEnv factor("MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR", "0.05");
  ScopedEnv jitter("MLFLOW_HTTP_REQUEST_BACKOFF_JITTER", "0");
  accel::Accelerator accelerator(mlflow_options(fresh_dir("unreachable")));
  const auto start = std::chrono::steady_clock::now();
  const accel::Error e = error_of([&] { accelerator.init_trackers("demo", {}); });
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));  // 3 refused attempts
  EXPECT_EQ(e.code(), accel::ErrorCode::IO);
  EXPECT_NE(std::string(e.what()).find(url), std::string::npos) << e.what();
  EXPECT_NE(std::string(e.what()).find("no answer"), std::string::npos) << e.what();
}

TEST(MlflowTarget, KeysMlflowWouldRejectAreNamedBeforeSending) {
  accel::detail::mlflow_check_key("train/loss:top-1 acc_2.5");
  for (const std::string& bad :
       std::vector<std::string>{"", "a\"b", "loss@1", "/abs", "a/../b", std::string(251, 'k')}) {
    const accel::Error e = error_of([&] { accel::detail::mlflow_check_key(bad); });
    EXPECT_EQ(e.code(), accel::ErrorCode::InvalidArgument) << bad;
    EXPECT_NE(std::string(e.what()).find("'" + bad + "'"), std::string::npos) << e.what();
  }
}

}  // namespace
