/* A missing peer at start-up: WORLD_SIZE=2 or 3 but nobody else joins.
   Creation must fail with ACCEL_ERR_TIMEOUT within the configured timeout (it
   used to take about twice as long), naming the ranks that did not arrive. */
#define _POSIX_C_SOURCE 200809L
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "capi_test.h"

/* A port nobody listens on right now, so parallel tests do not collide. */
static int free_port(void) {
  struct sockaddr_in sa;
  socklen_t len = sizeof sa;
  int fd = socket(AF_INET, SOCK_STREAM, 0), port = 0;
  memset(&sa, 0, sizeof sa);
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd >= 0 && bind(fd, (struct sockaddr*)&sa, sizeof sa) == 0 && getsockname(fd, (struct sockaddr*)&sa, &len) == 0) {
    port = ntohs(sa.sin_port);
  }
  if (fd >= 0) close(fd);
  return port;
}

static double now_seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Creation as `rank` of `world` with a 3 s timeout, nobody else there: fails
   with ACCEL_ERR_TIMEOUT before 6 s (timeout_ms + 1 s, with a generous margin),
   with `missing` in the message. */
static void expect_missing_ranks(const char* rank, const char* world, const char* missing) {
  accel_accelerator_options opts;
  accel_accelerator* acc = NULL;
  char port[16];
  double start, elapsed;
  snprintf(port, sizeof port, "%d", free_port());
  setenv("RANK", rank, 1);
  setenv("WORLD_SIZE", world, 1);
  setenv("MASTER_PORT", port, 1);
  accel_accelerator_options_init(&opts);
  opts.timeout_ms = 3000;
  start = now_seconds();
  EXPECT_ERROR(accel_accelerator_create(&opts, &acc), ACCEL_ERR_TIMEOUT, missing);
  elapsed = now_seconds() - start;
  fprintf(stderr, "rank %s of %s, after %.2f s: %s\n", rank, world, elapsed, accel_last_error());
  EXPECT(acc == NULL);
  EXPECT(elapsed < 6.0);
}

int main(void) {
  accel_accelerator_options opts;
  accel_accelerator* acc = NULL;
  char port[16];
  snprintf(port, sizeof port, "%d", free_port());
  setenv("RANK", "0", 1);
  setenv("WORLD_SIZE", "2", 1);
  setenv("MASTER_ADDR", "127.0.0.1", 1);
  setenv("MASTER_PORT", port, 1);
  accel_accelerator_options_init(&opts);
  opts.timeout_ms = 1500;
  EXPECT_ERROR(accel_accelerator_create(&opts, &acc), ACCEL_ERR_TIMEOUT, "rendezvous at 127.0.0.1");
  EXPECT(acc == NULL);
  fprintf(stderr, "message: %s\n", accel_last_error());

  /* Rank 0 hosts the store and names the ranks that never came; a rank that
     finds no store names rank 0. */
  expect_missing_ranks("0", "3", "ranks that did not arrive: [1, 2]");
  expect_missing_ranks("1", "2", "ranks that did not arrive: [0]");

  /* A rank that finds no store waits its whole timeout for one: at 1 s it
     gave up at once (c10d 1.13 stops retrying once less than its one-second
     retry delay is left). The deadline is set inside the call, so the time
     measured around it cannot be shorter than the timeout. */
  {
    double start, elapsed;
    snprintf(port, sizeof port, "%d", free_port());
    setenv("RANK", "1", 1);
    setenv("MASTER_PORT", port, 1);
    opts.timeout_ms = 1000;
    start = now_seconds();
    EXPECT_ERROR(accel_accelerator_create(&opts, &acc), ACCEL_ERR_TIMEOUT, "ranks that did not arrive: [0]");
    elapsed = now_seconds() - start;
    fprintf(stderr, "rank 1 of 2 at a 1 s timeout gave up after %.2f s\n", elapsed);
    EXPECT(elapsed >= 1.0);
    EXPECT(acc == NULL);
  }

  setenv("WORLD_SIZE", "two", 1);
  EXPECT_ERROR(accel_accelerator_create(&opts, &acc), ACCEL_ERR_INVALID_ARGUMENT, "WORLD_SIZE=\"two\"");
  setenv("WORLD_SIZE", "2", 1);
  setenv("RANK", "2", 1);
  EXPECT_ERROR(accel_accelerator_create(&opts, &acc), ACCEL_ERR_INVALID_ARGUMENT, "RANK=2");
  return capi_report("test_rendezvous_timeout");
}
