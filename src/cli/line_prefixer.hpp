// Turns one rank's output stream, read in arbitrary chunks, into whole lines
// that each start with the rank's prefix, so that ranks writing at the same
// time never mix inside a line.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>

namespace accel::cli {

class LinePrefixer {
 public:
  // A line longer than this is passed on in pieces of this size, so a program
  // that never writes a newline cannot grow the launcher without bound.
  static constexpr std::size_t kMaxLine = 64 * 1024;

  explicit LinePrefixer(std::string prefix) : prefix_(std::move(prefix)) {}

  // Takes the next chunk; returns the lines it completes, each prefixed and
  // ending with '\n' (empty when the chunk completes none).
  std::string feed(std::string_view chunk);

  // At end of stream: the unterminated last line, prefixed and given its
  // '\n'; empty when the stream ended with a newline.
  std::string finish();

 private:
  void emit(std::string& out, std::string_view line) const;

  std::string prefix_;
  std::string partial_;  // the started line, without prefix
};

}  // namespace accel::cli
