/* A rank that never reaches a collective: the other gets ACCEL_ERR_TIMEOUT
   within the configured timeout, naming the operation, its sequence number and
   the rank that did not arrive. Run with 2 processes. */
#include <string.h>
#include <unistd.h>

#include "dist_check.h"

int main(void) {
  accel_accelerator_options opts;
  accel_accelerator* acc = NULL;
  int rank = 0;
  int64_t timeout = 0;
  accel_accelerator_options_init(&opts);
  opts.timeout_ms = 2000;
  CHECK_OK(accel_accelerator_create(&opts, &acc));
  CHECK_OK(accel_accelerator_process_index(acc, &rank));
  dist_check_rank = rank;
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
