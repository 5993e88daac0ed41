// Where each rank's stdout and stderr go: to the terminal (prefixed lines), to
// the rank's log file DIR/rank_N.log (as written), or both. The choices are
// torchrun's (and Accelerate's) --redirects, --tee, --log_dir and
// --local_ranks_filter, so their command lines work unchanged.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace accel::cli {

// Standard streams as torchrun numbers them; combinations are bitwise ors.
enum StdStream : unsigned { kNoStream = 0, kStdout = 1, kStderr = 2, kBothStreams = 3 };

// A --redirects or --tee value: "N" for every local rank, or
// "LOCAL_RANK:N,..." for the listed local ranks (the others get 0), where N
// is 0 (none), 1 (stdout), 2 (stderr) or 3 (both).
class StreamChoice {
 public:
  StreamChoice() = default;
  // Throws std::invalid_argument, its message quoting `text`, when `text` is
  // neither form.
  static StreamChoice parse(const std::string& text);

  unsigned streams_of(int local_rank) const;
  // The local ranks the choice names; empty for the "N" form.
  std::vector<int> named_local_ranks() const;

 private:
  unsigned every_rank_ = kNoStream;
  std::map<int, unsigned> per_rank_;
};

// "0,2": the local ranks whose output reaches the terminal. Throws
// std::invalid_argument quoting `text` unless it is a comma-separated list of
// non-negative integers.
std::vector<int> parse_local_ranks(const std::string& text);

struct OutputRouting {
  // Where the rank_N.log files go. Empty with files wanted: the supervisor
  // makes a fresh directory under $TMPDIR, as torchrun does.
  std::string log_dir;
  // Unset: not given. With neither given, --log_dir alone sends both streams
  // of every rank to its file only, and without --log_dir to the terminal.
  std::optional<StreamChoice> redirects;               // to the file only
  std::optional<StreamChoice> tee;                     // to the file and the terminal
  std::optional<std::vector<int>> local_ranks_filter;  // unset: every local rank on the terminal

  struct Route {
    bool to_file = false;
    bool to_terminal = false;
  };
  Route route(int local_rank, StdStream stream) const;
  // Whether any of `local_ranks` ranks writes a log file.
  bool writes_files(int local_ranks) const;
};

}  // namespace accel::cli
