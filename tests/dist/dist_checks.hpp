// Checks for the C++ multi-process test programs: a failed check prints the
// condition with the rank and exits non-zero, so `accel launch` reports the
// rank; `has` finds a word among the program's arguments. (The C programs
// use dist_check.h.)
#pragma once

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace dist_checks {

// Set by each program once it knows its rank; -1 before.
inline int rank_for_messages = -1;

inline void check(bool condition, const std::string& what) {
  if (!condition) {
    std::fprintf(stderr, "rank %d: check failed: %s\n", rank_for_messages, what.c_str());
    std::exit(1);
  }
}

// Whether `word` is one of argv[first..argc).
inline bool has(int argc, char** argv, const char* word, int first = 2) {
  for (int i = first; i < argc; ++i) {
    if (std::strcmp(argv[i], word) == 0) return true;
  }
  return false;
}

}  // namespace dist_checks
