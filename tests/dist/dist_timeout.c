/* Ranks that do not arrive, run under `accel launch`.
     (no argument)  2 processes: a rank that never reaches a collective; the
                    other gets ACCEL_ERR_TIMEOUT within the configured timeout,
                    naming the operation, its sequence number and the missing rank.
     rendezvous     3 processes: ranks 1 and 2 never create an accelerator; rank
                    0's creation fails with ACCEL_ERR_TIMEOUT within its timeout
                    (3 s; well before 6 s), naming ranks 1 and 2.
     early_exit     2 processes: rank 1 exits 0 at once; rank 0 waits in the
                    rendezvous (timeout 60 s) until the launcher stops it.
     second_rendezvous
                    2 processes: both complete one rendezvous, then rank 1 exits
                    0 and rank 0 waits in a second one (timeout 60 s) until the
                    launcher stops it.
   The last two are run by tests/cli/test_launch_end_to_end.cpp, which checks
   the launcher's verdict. */
#define _POSIX_C_SOURCE 200809L
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dist_check.h"

static double now_seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int rank_from_env(void) {
  const char* rank = getenv("RANK");
  return rank != NULL ? atoi(rank) : -1;
}

static accel_accelerator* create(int64_t timeout_ms) {
  accel_accelerator_options opts;
  accel_accelerator* acc = NULL;
  accel_accelerator_options_init(&opts);
  opts.timeout_ms = timeout_ms;
  CHECK_OK(accel_accelerator_create(&opts, &acc));
  return acc;
}

static int collective_timeout(void) {
  accel_accelerator* acc = create(2000);
  int rank = 0;
  int64_t timeout = 0;
  CHECK_OK(accel_accelerator_process_index(acc, &rank));
  CHECK_OK(accel_accelerator_timeout_ms(acc, &timeout));
  CHECK(timeout == 2000);
  CHECK_OK(accel_accelerator_wait_for_everyone(acc)); /* both arrive: sequence 0 */
  if (rank == 1) {
    sleep(8); /* takes another path and never calls the barrier */
  } else {
    accel_status status = accel_accelerator_wait_for_everyone(acc);
    const char* message = accel_last_error();
    fprintf(stderr, "rank 0 got: %s: %s\n", accel_status_name(status), message);
    CHECK(status == ACCEL_ERR_TIMEOUT);
    CHECK(strstr(message, "wait_for_everyone #1") != NULL);
    CHECK(strstr(message, "did not arrive: [1]") != NULL);
    printf("rank 0: timeout reported\n");
  }
  accel_accelerator_free(acc);
  return 0;
}

static int rendezvous_timeout(void) {
  accel_accelerator_options opts;
  accel_accelerator* acc = NULL;
  if (dist_check_rank != 0) {
    sleep(8); /* longer than rank 0's bound, so it never joins */
    return 0;
  }
  accel_accelerator_options_init(&opts);
  opts.timeout_ms = 3000;
  double start = now_seconds();
  accel_status status = accel_accelerator_create(&opts, &acc);
  double elapsed = now_seconds() - start;
  const char* message = accel_last_error();
  fprintf(stderr, "rank 0 got after %.2f s: %s: %s\n", elapsed, accel_status_name(status), message);
  CHECK(status == ACCEL_ERR_TIMEOUT);
  CHECK(acc == NULL);
  CHECK(strstr(message, "ranks that did not arrive: [1, 2]") != NULL);
  CHECK(elapsed < 6.0); /* timeout_ms + 1 s, with a generous margin; it used to take twice the timeout */
  printf("rank 0: rendezvous timeout reported\n");
  return 0;
}

static int exit_before_rendezvous(int rounds_for_rank1) {
  accel_accelerator* acc = NULL;
  if (dist_check_rank == 1 && rounds_for_rank1 == 0) return 0;
  acc = create(60000);
  /* Both ranks finish setting up the first group before either tears it down:
     without this, rank 0 could close its Gloo pairs while rank 1 was still
     connecting (seen on LibTorch 2.15 under load), and rank 1 failed there. */
  CHECK_OK(accel_accelerator_wait_for_everyone(acc));
  if (dist_check_rank == 1) {
    accel_accelerator_free(acc);
    return 0; /* leaves before rank 0's second rendezvous */
  }
  accel_accelerator_free(acc);
  if (rounds_for_rank1 > 0) acc = create(60000);
  /* Not reached: rank 1 is gone, and the launcher stops this rank first. */
  fprintf(stderr, "rank 0: the rendezvous completed without rank 1\n");
  accel_accelerator_free(acc);
  return 1;
}

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "collective";
  dist_check_rank = rank_from_env();
  if (strcmp(mode, "collective") == 0) return collective_timeout();
  if (strcmp(mode, "rendezvous") == 0) return rendezvous_timeout();
  if (strcmp(mode, "early_exit") == 0) return exit_before_rendezvous(0);
  if (strcmp(mode, "second_rendezvous") == 0) return exit_before_rendezvous(1);
  fprintf(stderr, "dist_timeout: unknown mode %s\n", mode);
  return 2;
}
