/* A minimal check harness for the C ABI tests: count failures, report them, keep going. */
#ifndef ACCEL_TESTS_CAPI_TEST_H
#define ACCEL_TESTS_CAPI_TEST_H

#include <stdio.h>
#include <string.h>

#include "accel/accel.h"

#ifdef CAPI_TEST_SHARED_COUNTERS
/* A test program of several files: one of them defines these. */
extern int capi_checks;
extern int capi_failures;
#else
static int capi_checks = 0;
static int capi_failures = 0;
#endif

#define EXPECT(cond)                                                                                           \
  do {                                                                                                         \
    ++capi_checks;                                                                                             \
    if (!(cond)) {                                                                                             \
      ++capi_failures;                                                                                         \
      fprintf(stderr, "%s:%d: expected %s (last error: %s)\n", __FILE__, __LINE__, #cond, accel_last_error()); \
    }                                                                                                          \
  } while (0)

#define EXPECT_OK(call) EXPECT((call) == ACCEL_OK)
/* The call fails with `status` and the message mentions `needle`. */
#define EXPECT_ERROR(call, status, needle)                \
  do {                                                    \
    accel_status got_ = (call);                           \
    EXPECT(got_ == (status));                             \
    EXPECT(strstr(accel_last_error(), (needle)) != NULL); \
  } while (0)

/* Bytes of address space the process maps now (VmSize), or 0: the base for
   the RLIMIT_AS limits of the tests that make allocations fail for real. */
static inline size_t capi_mapped_bytes(void) {
  char line[256];
  size_t kib = 0;
  FILE* status = fopen("/proc/self/status", "r");
  if (status == NULL) return 0;
  while (fgets(line, sizeof line, status) != NULL) {
    if (sscanf(line, "VmSize: %zu kB", &kib) == 1) break;
  }
  fclose(status);
  return kib * 1024;
}

static inline int capi_report(const char* name) {
  printf("%s: %d passed, %d failed\n", name, capi_checks - capi_failures, capi_failures);
  return capi_failures == 0 ? 0 : 1;
}

#endif
