// `accel config`: writing Accelerate's config file, by questionnaire on the
// terminal or with defaults.
#pragma once

#include <iosfwd>
#include <optional>
#include <string>

#include "cli/config_file.hpp"

namespace accel::cli {

// Asks the questions `accelerate config` asks for a local machine (machine
// type, machines, this machine's rank, main process address and port, process
// count, GPU ids, CPU only, mixed precision), one line of `in` per answer,
// prompting on `out`; an empty answer takes the default shown in brackets, and
// a wrong one is asked again. Returns the answers; throws ConfigFileError when
// `in` ends before the last answer.
ConfigValues ask_config_questions(std::istream& in, std::ostream& out);

// `accel config default`: what `accelerate config default` writes on a machine
// with cuda_devices GPUs (as LibTorch counts them): JSON with Accelerate's keys
// and values, sorted; with no GPU use_cpu true and one process, with one GPU
// use_cpu false, with n > 1 distributed_type MULTI_GPU and n processes.
// nullopt (could not ask LibTorch): use_cpu false, one process. Like
// Accelerate, refuses to replace an existing file: false, with a message on
// `out`. Throws ConfigFileError when the file cannot be written.
bool write_default_config(const std::string& path, const std::string& mixed_precision, std::optional<int> cuda_devices,
                          std::ostream& out);

}  // namespace accel::cli
