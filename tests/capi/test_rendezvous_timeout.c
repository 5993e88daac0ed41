/* A missing peer at start-up: WORLD_SIZE=2 but nobody else joins. Creation
   must fail with ACCEL_ERR_TIMEOUT after the configured timeout, not hang. */
#define _POSIX_C_SOURCE 200809L
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
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

  setenv("WORLD_SIZE", "two", 1);
  EXPECT_ERROR(accel_accelerator_create(&opts, &acc), ACCEL_ERR_INVALID_ARGUMENT, "WORLD_SIZE=\"two\"");
  setenv("WORLD_SIZE", "2", 1);
  setenv("RANK", "2", 1);
  EXPECT_ERROR(accel_accelerator_create(&opts, &acc), ACCEL_ERR_INVALID_ARGUMENT, "RANK=2");
  return capi_report("test_rendezvous_timeout");
}
