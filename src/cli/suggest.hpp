// "Did you mean ...?" for a mistyped flag or subcommand (`--nproc_per_nod`,
// `accel lanch`), as git and Python's argparse (3.12+) answer.
#pragma once

#include <CLI/CLI.hpp>

#include <optional>
#include <string>
#include <vector>

#include "core/closest_name.hpp"

namespace accel::cli {

// The closest candidate if it is close enough to be a typo (core/closest_name.hpp).
using accel::detail::closest_name;

// What `given`, an argument `command` did not understand, was probably meant
// to be among its flags ("--name" and "-n" forms) and subcommands.
std::optional<std::string> suggest_for(const CLI::App& command, const std::string& given);

}  // namespace accel::cli
