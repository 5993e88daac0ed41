// `accel config`: writing Accelerate's config file, by questionnaire on the
// terminal or with defaults.
#pragma once

#include <iosfwd>
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

// `accel config default`: one process, distributed_type NO, use_cpu false (the
// library takes a GPU where it finds one). Like Accelerate, refuses to replace
// an existing file: false, with a message on `out`.
bool write_default_config(const std::string& path, const std::string& mixed_precision, std::ostream& out);

}  // namespace accel::cli
