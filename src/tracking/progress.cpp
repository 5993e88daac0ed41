// Progress bar: redrawn in place on a terminal, plain decile lines elsewhere.
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <limits>
#include <string>

#include "accel/logging.hpp"
#include "tracking/rank_env.hpp"

namespace accel {
namespace {

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

bool disabled_by_env() {
  const char* env = std::getenv("ACCEL_DISABLE_PROGRESS_BAR");
  return env != nullptr && *env != '\0' && std::string(env) != "0";
}

}  // namespace

ProgressBar::ProgressBar(int64_t total, std::string description, bool main_process_only, std::FILE* out)
    : total_(total), description_(std::move(description)), out_(out) {
  active_ =
      out_ != nullptr && total_ > 0 && !disabled_by_env() && (!main_process_only || detail::rank_from_env().rank == 0);
  tty_ = active_ && isatty(fileno(out_));
  start_seconds_ = now_seconds();
  if (active_ && tty_) draw();
}

ProgressBar::~ProgressBar() { close(); }

void ProgressBar::update(int64_t steps) {
  if (closed_) return;
  // Saturates: a huge total or step count must not overflow (undefined behaviour).
  position_ =
      steps > std::numeric_limits<int64_t>::max() - position_ ? std::numeric_limits<int64_t>::max() : position_ + steps;
  if (!active_) return;
  if (tty_) {
    draw();
    return;
  }
  // In double: shown * 10 overflows int64 for totals near its maximum.
  const int decile = static_cast<int>(10.0 * static_cast<double>(std::min(position_, total_)) / total_);
  if (decile > last_decile_) {
    last_decile_ = decile;
    draw();
  }
}

void ProgressBar::close() {
  if (closed_) return;
  closed_ = true;
  if (active_ && tty_) std::fputc('\n', out_), std::fflush(out_);
}

void ProgressBar::draw() {
  const int64_t shown = std::min(position_, total_);
  const double fraction = static_cast<double>(shown) / static_cast<double>(total_);
  const int percent = static_cast<int>(fraction * 100);
  const double elapsed = now_seconds() - start_seconds_;
  const double rate = elapsed > 0 ? static_cast<double>(position_) / elapsed : 0.0;
  char stats[96];
  std::snprintf(stats, sizeof stats, "%3d%% %lld/%lld [%.1fs, %.2f it/s]", percent, static_cast<long long>(shown),
                static_cast<long long>(total_), elapsed, rate);
  std::string line;
  if (tty_) {
    const int width = 30, filled = static_cast<int>(fraction * width);
    line = "\r" + description_ + " |" + std::string(filled, '#') + std::string(width - filled, ' ') + "| " + stats;
  } else {
    line = description_ + ": " + stats + "\n";
  }
  std::fwrite(line.data(), 1, line.size(), out_);
  std::fflush(out_);
}

}  // namespace accel
