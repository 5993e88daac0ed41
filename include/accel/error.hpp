// libaccel C++ API: the one exception type the core throws.
//
// Every failure inside libaccel is reported as accel::Error carrying an ErrorCode
// whose numeric values equal the C ABI's accel_status codes, so the C layer maps
// errors without a table. Messages name the offending value.
#pragma once

#include <stdexcept>
#include <string>

namespace accel {

enum class ErrorCode : int {
  InvalidArgument = 1,  // a bad value from the caller: names the value
  State = 2,            // a call that is not valid now (e.g. step before prepare)
  IO = 3,               // a file could not be read or written, or is malformed
  Distributed = 4,      // a process group or collective failed
  Timeout = 5,          // a collective or rendezvous did not complete in time
  Unsupported = 6,      // the build or device cannot do what was asked
  Internal = 7,         // a bug in libaccel or LibTorch
  Resource = 8,         // the system refused a resource (threads, memory): retry with less
};

class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  ErrorCode code() const noexcept { return code_; }

 private:
  ErrorCode code_;
};

[[noreturn]] inline void fail(ErrorCode code, const std::string& message) { throw Error(code, message); }

inline void require(bool condition, ErrorCode code, const std::string& message) {
  if (!condition) fail(code, message);
}

inline void require_arg(bool condition, const std::string& message) {
  if (!condition) fail(ErrorCode::InvalidArgument, message);
}

}  // namespace accel
