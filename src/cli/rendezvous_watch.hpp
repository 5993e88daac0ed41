// What the ranks of one attempt tell the launcher about their rendezvous, and
// the rule that stops a job whose rendezvous can no longer complete.
//
// A rank started by `accel launch` reports "join N" when it starts its Nth
// rendezvous and "done N" once every rank has arrived (src/state/launcher_report.hpp).
// Each rendezvous needs every rank, so a rank that has exited, even with code 0,
// without completing rendezvous N leaves the ranks waiting in N to wait out their
// whole timeout. Programs that never report (no libaccel, or no rendezvous)
// are never stopped by this rule.
#pragma once

#include <map>
#include <optional>
#include <string_view>
#include <vector>

namespace accel::cli {

class RendezvousWatch {
 public:
  // A report from `rank`: "join N" or "done N" (N >= 1); anything else is ignored.
  void report(int rank, std::string_view message);
  // `rank` exited with code 0 (a failing rank stops the job anyway).
  void exited(int rank);

  struct Stranded {
    std::vector<int> gone;     // exited without completing the rendezvous
    std::vector<int> waiting;  // still waiting in it
  };
  // The ranks waiting in a rendezvous that cannot complete, and the ranks whose
  // exit decided that; nullopt while every rendezvous can still complete.
  std::optional<Stranded> stranded() const;

 private:
  struct State {
    int joined = 0;  // the last rendezvous joined
    int done = 0;    // the last rendezvous completed
    bool exited = false;
  };
  std::map<int, State> ranks_;
  // The last rendezvous any rank completed: every rank arrived in it, so no rank
  // waiting in it or before it is stranded, whoever left since.
  int completed_ = 0;
};

}  // namespace accel::cli
