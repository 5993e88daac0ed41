// TensorBoard event files: logging_dir/<run>/events.out.tfevents.<secs>.<host>.<pid>,
// TFRecord-framed Event messages (scalars, text, and the run's hyperparameters
// through the HParams plugin's session_start_info).
#include <unistd.h>

#include <cstring>

#include "accel/error.hpp"
#include "tb_event.pb.h"
#include "tb_hparams.pb.h"
#include "tracking/builtin_trackers.hpp"
#include "tracking/tracker_kwargs.hpp"
#include "tracking/tracker_common.hpp"
#include "tracking/crc32c.hpp"
#include "tracking/record_file.hpp"

namespace accel::detail {
namespace {

namespace tb = ::accel_internal::tb;

void put_le(std::string& out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out += static_cast<char>((value >> (8 * i)) & 0xFF);
}

// One TFRecord: length, masked CRC of the length, data, masked CRC of the data.
std::string frame(const std::string& data) {
  std::string out;
  put_le(out, data.size(), 8);
  put_le(out, masked_crc32c(out.data(), 8), 4);
  out += data;
  put_le(out, masked_crc32c(data.data(), data.size()), 4);
  return out;
}

void set_text(tb::Summary::Value* value, const std::string& tag, const std::string& text) {
  value->set_tag(tag);
  value->mutable_metadata()->mutable_plugin_data()->set_plugin_name("text");
  auto* tensor = value->mutable_tensor();
  tensor->set_dtype(tb::DT_STRING);
  tensor->mutable_tensor_shape();  // a scalar string
  tensor->add_string_val(text);
}

// SummaryWriter's keywords Accelerate passes through init_kwargs.
struct TensorBoardOptions {
  std::string filename_suffix;
  std::optional<int64_t> purge_step;
};

class TensorBoardTracker : public Tracker {
 public:
  TensorBoardTracker(std::string dir, TensorBoardOptions options)
      : dir_(std::move(dir)), options_(std::move(options)) {}
  std::string name() const override { return "tensorboard"; }

  void init(const std::string& run_name, const TrackerConfig& config) override {
    char host[256] = "localhost";
    gethostname(host, sizeof(host) - 1);
    const double now = unix_seconds();
    file_.open(dir_ + "/" + run_name + "/events.out.tfevents." + std::to_string(static_cast<int64_t>(now)) + "." +
                   host + "." + std::to_string(getpid()) + options_.filename_suffix,
               true);
    tb::Event version;
    version.set_wall_time(now);
    version.set_file_version("brain.Event:2");
    write(version);
    if (options_.purge_step) {  // as SummaryWriter(purge_step=...) starts its file
      tb::Event start = new_event(*options_.purge_step);
      start.mutable_session_log()->set_status(tb::SessionLog::START);
      write(start);
    }
    if (!config.empty()) write_hparams(config, now);
  }

  void log(const Scalars& values, std::optional<int64_t> step) override {
    tb::Event event = new_event(step);
    for (const auto& [tag, scalar] : values) {
      auto* value = event.mutable_summary()->add_value();
      value->set_tag(tag);
      value->set_simple_value(static_cast<float>(scalar));
    }
    write(event);
  }

  void log_text(const std::string& tag, const std::string& text, std::optional<int64_t> step) override {
    tb::Event event = new_event(step);
    set_text(event.mutable_summary()->add_value(), tag, text);
    write(event);
  }

  void finish() override { file_.close(); }

 private:
  tb::Event new_event(std::optional<int64_t> step) {
    tb::Event event;
    event.set_wall_time(unix_seconds());
    event.set_step(step.value_or(0));
    return event;
  }

  // The HParams plugin reads a run's hyperparameters from this summary.
  void write_hparams(const TrackerConfig& config, double now) {
    tb::HParamsPluginData data;
    data.set_version(0);
    auto* start = data.mutable_session_start_info();
    start->set_start_time_secs(now);
    for (const auto& [key, value] : config) {
      auto& out = (*start->mutable_hparams())[key];
      if (std::holds_alternative<double>(value))
        out.set_number_value(std::get<double>(value));
      else
        out.set_string_value(std::get<std::string>(value));
    }
    tb::Event event = new_event(0);
    auto* summary_value = event.mutable_summary()->add_value();
    summary_value->set_tag("_hparams_/session_start_info");
    auto* plugin = summary_value->mutable_metadata()->mutable_plugin_data();
    plugin->set_plugin_name("hparams");
    plugin->set_content(data.SerializeAsString());
    write(event);
  }

  void write(const tb::Event& event) { file_.append(frame(event.SerializeAsString())); }

  std::string dir_;
  TensorBoardOptions options_;
  RecordFile file_;
};

}  // namespace

std::unique_ptr<Tracker> make_tensorboard_tracker(const std::string& dir, const nlohmann::json& kwargs) {
  TrackerKwargs read("tensorboard", kwargs);
  TensorBoardOptions options;
  options.filename_suffix = read.string("filename_suffix").value_or("");
  require_arg(options.filename_suffix.find('/') == std::string::npos,
              "init_kwargs[\"tensorboard\"][\"filename_suffix\"] '" + options.filename_suffix + "' holds a '/'");
  options.purge_step = read.integer("purge_step", 0);
  // Every event is written to the file as it is logged, sooner than any
  // flush interval or queue length asks: these two are checked and kept.
  read.number("flush_secs", 0);
  read.integer("max_queue", 0);
  read.reject_unread();
  return std::make_unique<TensorBoardTracker>(dir, std::move(options));
}

}  // namespace accel::detail
