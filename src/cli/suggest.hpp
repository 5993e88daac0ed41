// "Did you mean ...?" for a mistyped flag or subcommand (`--nproc_per_nod`,
// `accel lanch`), as git and Python's argparse (3.12+) answer.
#pragma once

#include <CLI/CLI.hpp>

#include <optional>
#include <string>
#include <vector>

namespace accel::cli {

// The candidate closest to `given` by edit distance (insertions, deletions,
// substitutions and swaps of neighbours), if it is close enough to be a typo:
// at most a third of the longer name's length, and at least 1. Ties go to the
// first candidate.
std::optional<std::string> closest_name(const std::string& given, const std::vector<std::string>& candidates);

// What `given`, an argument `command` did not understand, was probably meant
// to be among its flags ("--name" and "-n" forms) and subcommands.
std::optional<std::string> suggest_for(const CLI::App& command, const std::string& given);

}  // namespace accel::cli
