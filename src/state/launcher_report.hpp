// Tells `accel launch` where this rank is in the rendezvous, so that the
// launcher can stop a job whose rendezvous can no longer complete (a rank
// exited, even with code 0, before joining it) instead of leaving the other
// ranks to wait out the whole timeout.
//
// The launcher passes one end of a datagram socket pair in
// ACCEL_LAUNCHER_REPORT_FD (docs/launch.md). Without it (another launcher,
// mpirun, srun) reports go nowhere. A report never fails or blocks the rank.
#pragma once

namespace accel::detail {

// Rendezvous are numbered per process from 1, in the order the process joins
// them; every rank of a job joins them in the same order (each is collective).
class LauncherReport {
 public:
  // Sends "join N" for this process's next rendezvous.
  LauncherReport();
  // Sends "done N": every rank arrived and the process group exists.
  void done();

 private:
  int round_;
};

}  // namespace accel::detail
