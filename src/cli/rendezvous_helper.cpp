// `accel-selftest --rendezvous KEY=VALUE...`: the LibTorch half of an elastic
// agent. The accel command has no LibTorch, so its agent (elastic_agent.cpp)
// starts this process and asks it, one line at a time on stdin, to act on the
// c10d rendezvous (src/elastic/store_rendezvous.hpp); each request gets lines
// back on stdout, the last of which is the answer:
//   next                 -> round R GROUP_RANK NNODES NODE...  | closed REASON | error MESSAGE
//   publish R ADDR PORT  -> ok | error MESSAGE
//   master R             -> master ADDR PORT | error MESSAGE
//   check                -> ok | change REASON | error MESSAGE
//   leave | close REASON -> ok | error MESSAGE
// Any answer may follow "event MESSAGE" lines (a node removed for missed
// heartbeats). While `next` waits, a "stop" line (or the end of stdin) ends the
// wait with "error stopped". The first line is "ready NODE_ID ADDRESS HOSTS_STORE"
// or "error MESSAGE". The process dies with its agent (PR_SET_PDEATHSIG), so a
// killed agent's heartbeats stop with it.
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>
#include <sstream>
#include <string>

#include "elastic/store_rendezvous.hpp"

namespace {

using accel::detail::elastic::RendezvousClosed;
using accel::detail::elastic::RendezvousOptions;
using accel::detail::elastic::Round;
using accel::detail::elastic::StoreRendezvous;

std::chrono::milliseconds milliseconds(const std::string& text) { return std::chrono::milliseconds(std::stoll(text)); }

RendezvousOptions parse_options(int argc, char** argv) {
  std::map<std::string, std::string> values;
  for (int i = 2; i < argc; ++i) {
    std::string item = argv[i];
    size_t equals = item.find('=');
    if (equals == std::string::npos) throw std::invalid_argument("not KEY=VALUE: " + item);
    values[item.substr(0, equals)] = item.substr(equals + 1);
  }
  RendezvousOptions options;
  options.endpoint_host = values.at("endpoint_host");
  options.endpoint_port = std::stoi(values.at("endpoint_port"));
  options.run_id = values.at("run_id");
  options.limits.min_nodes = std::stoi(values.at("min_nodes"));
  options.limits.max_nodes = std::stoi(values.at("max_nodes"));
  options.limits.last_call_ms = std::stoll(values.at("last_call_ms"));
  options.join_timeout = milliseconds(values.at("join_timeout_ms"));
  options.keep_alive_interval = milliseconds(values.at("keep_alive_ms"));
  options.keep_alive_max_attempt = std::stoi(values.at("keep_alive_max_attempt"));
  options.store_timeout = milliseconds(values.at("store_timeout_ms"));
  if (auto host = values.find("is_host"); host != values.end()) options.is_host = host->second == "1";
  return options;
}

void answer(const std::string& line) { std::cout << line << '\n' << std::flush; }

// The agent's requests, read with read(2) so that poll(2) and the buffer agree
// on what has arrived (a "stop" must be seen while `next` waits).
class Requests {
 public:
  // Blocks for the next line; false at the end of input.
  bool next(std::string& line) {
    for (;;) {
      if (take(line)) return true;
      if (!fill()) return false;
    }
  }
  // Without blocking: true when the agent asked to stop, or is gone.
  bool stop_asked() {
    std::string line;
    for (;;) {
      if (take(line)) {
        if (line == "stop") return true;
        continue;  // nothing else is sent while next waits
      }
      pollfd input{STDIN_FILENO, POLLIN, 0};
      if (::poll(&input, 1, 0) <= 0) return false;
      if (!fill()) return true;
    }
  }

 private:
  bool take(std::string& line) {
    const size_t end = buffer_.find('\n');
    if (end == std::string::npos) return false;
    line = buffer_.substr(0, end);
    buffer_.erase(0, end + 1);
    return true;
  }
  bool fill() {
    char chunk[4096];
    ssize_t got;
    do {
      got = ::read(STDIN_FILENO, chunk, sizeof chunk);
    } while (got < 0 && errno == EINTR);
    if (got <= 0) return false;
    buffer_.append(chunk, static_cast<size_t>(got));
    return true;
  }
  std::string buffer_;
};

void flush_events(StoreRendezvous& rendezvous) {
  for (const auto& event : rendezvous.take_events()) answer("event " + event);
}

void serve(StoreRendezvous& rendezvous) {
  Requests requests;
  std::string line;
  while (requests.next(line)) {
    std::istringstream request(line);
    std::string verb;
    request >> verb;
    try {
      if (verb == "next") {
        Round round = rendezvous.next_round([&] { return requests.stop_asked(); });
        flush_events(rendezvous);
        std::string reply = "round " + std::to_string(round.round) + " " + std::to_string(round.group_rank) + " " +
                            std::to_string(round.nnodes);
        for (const auto& node : round.nodes) reply += " " + node;
        answer(reply);
      } else if (verb == "publish" || verb == "master") {
        Round round;
        request >> round.round;
        if (verb == "publish") {
          std::string addr;
          int port = 0;
          request >> addr >> port;
          rendezvous.publish_master(round, addr, port);
          answer("ok");
        } else {
          auto [addr, port] = rendezvous.wait_for_master(round);
          answer("master " + addr + " " + std::to_string(port));
        }
      } else if (verb == "check") {
        auto change = rendezvous.membership_change();
        flush_events(rendezvous);
        answer(change ? "change " + *change : "ok");
      } else if (verb == "leave") {
        rendezvous.leave();
        answer("ok");
      } else if (verb == "close") {
        std::string reason;
        std::getline(request >> std::ws, reason);
        rendezvous.close(reason);
        answer("ok");
      } else if (verb != "stop") {  // a stop that came after next had finished
        answer("error unknown request: " + line);
      }
    } catch (const RendezvousClosed& closed) {
      answer(std::string("closed ") + closed.what());
    } catch (const std::exception& error) {
      answer(std::string("error ") + error.what());
    }
  }
}

}  // namespace

int serve_rendezvous(int argc, char** argv) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() == 1) return 1;  // the agent died before the line above took effect
  try {
    StoreRendezvous rendezvous(parse_options(argc, argv));
    answer("ready " + rendezvous.node_id() + " " + rendezvous.local_address() + " " +
           (rendezvous.hosts_store() ? "1" : "0"));
    serve(rendezvous);
    return 0;
  } catch (const std::exception& error) {
    answer(std::string("error ") + error.what());
    return 1;
  }
}
