// The framing of a Weights & Biases transaction log (run-<id>.wandb), which
// wandb-core reads for `wandb sync` and `wandb leet`: LevelDB's log format
// (32 KiB blocks of checksummed fragments) after a 7-byte W&B header.
#pragma once

#include <cstdint>
#include <string>

#include "tracking/record_file.hpp"

namespace accel::detail {

class WandbLogWriter {
 public:
  // Creates path (and its folders) and writes the header. Throws IO naming path.
  void open(const std::string& path);
  // Appends one serialized record, split into fragments at block boundaries.
  // One write(2) per record, so a killed process leaves whole records behind.
  void append(const std::string& record);
  void close() { file_.close(); }

 private:
  RecordFile file_;
  uint64_t offset_ = 0;  // bytes written so far, header included
};

}  // namespace accel::detail
