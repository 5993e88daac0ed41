#include "cli/line_prefixer.hpp"

namespace accel::cli {

std::string LinePrefixer::feed(std::string_view chunk) {
  std::string out;
  while (!chunk.empty()) {
    std::size_t newline = chunk.find('\n');
    std::size_t line_end = newline == std::string_view::npos ? chunk.size() : newline;
    std::size_t room = kMaxLine - partial_.size();
    if (line_end > room) {
      // Too long for one line: pass a full piece on, go on with the rest.
      partial_.append(chunk.substr(0, room));
      chunk.remove_prefix(room);
    } else if (newline == std::string_view::npos) {
      partial_.append(chunk);
      break;
    } else {
      partial_.append(chunk.substr(0, newline));
      chunk.remove_prefix(newline + 1);
    }
    emit(out, partial_);
    partial_.clear();
  }
  return out;
}

std::string LinePrefixer::finish() {
  std::string out;
  if (!partial_.empty()) emit(out, partial_);
  partial_.clear();
  return out;
}

void LinePrefixer::emit(std::string& out, std::string_view line) const {
  out.append(prefix_);
  out.append(line);
  out.push_back('\n');
}

}  // namespace accel::cli
