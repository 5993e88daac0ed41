/* Checks for the multi-process test programs: print the failing condition with
   the rank, and exit non-zero so `accel launch` reports the rank. */
#ifndef ACCEL_TESTS_DIST_CHECK_H
#define ACCEL_TESTS_DIST_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#include "accel/accel.h"

static int dist_check_rank = -1;

#define CHECK(cond)                                                                                               \
  do {                                                                                                            \
    if (!(cond)) {                                                                                                \
      fprintf(stderr, "rank %d: %s:%d: check failed: %s (last error: %s)\n", dist_check_rank, __FILE__, __LINE__, \
              #cond, accel_last_error());                                                                         \
      exit(1);                                                                                                    \
    }                                                                                                             \
  } while (0)

#define CHECK_OK(call) CHECK((call) == ACCEL_OK)

#endif
