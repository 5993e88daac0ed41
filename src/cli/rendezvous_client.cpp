#include "cli/rendezvous_client.hpp"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <sstream>

extern char** environ;

namespace accel::cli {

namespace {

std::string milliseconds(double seconds) {
  return std::to_string(static_cast<long long>(std::llround(seconds * 1000)));
}

bool starts_with(const std::string& text, const std::string& prefix) { return text.rfind(prefix, 0) == 0; }

}  // namespace

RendezvousClient::RendezvousClient(const ElasticSettings& settings, const std::string& helper) {
  if (helper.empty()) {
    throw RendezvousFailure(
        "an elastic launch needs accel-selftest (next to accel, or in ../libexec/accel), which holds the "
        "rendezvous store connection");
  }
  std::vector<std::string> args{
      helper,
      "--rendezvous",
      "endpoint_host=" + settings.endpoint_host,
      "endpoint_port=" + std::to_string(settings.endpoint_port),
      "run_id=" + settings.run_id,
      "min_nodes=" + std::to_string(settings.nodes.min),
      "max_nodes=" + std::to_string(settings.nodes.max),
      "last_call_ms=" + milliseconds(settings.last_call_timeout_s),
      "join_timeout_ms=" + milliseconds(settings.join_timeout_s),
      "keep_alive_ms=" + milliseconds(settings.keep_alive_interval_s),
      "keep_alive_max_attempt=" + std::to_string(settings.keep_alive_max_attempt),
      "store_timeout_ms=" + milliseconds(settings.timeout_s),
  };
  if (settings.is_host) args.push_back(std::string("is_host=") + (*settings.is_host ? "1" : "0"));
  int to_child[2], from_child[2];
  if (::pipe2(to_child, O_CLOEXEC) != 0 || ::pipe2(from_child, O_CLOEXEC) != 0) {
    throw RendezvousFailure(std::string("cannot make pipes for the rendezvous helper: ") + std::strerror(errno));
  }
  posix_spawn_file_actions_t actions;
  ::posix_spawn_file_actions_init(&actions);
  ::posix_spawn_file_actions_adddup2(&actions, to_child[0], STDIN_FILENO);
  ::posix_spawn_file_actions_adddup2(&actions, from_child[1], STDOUT_FILENO);
  std::vector<char*> argv;
  for (auto& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  int rc = ::posix_spawn(&pid_, helper.c_str(), &actions, nullptr, argv.data(), environ);
  ::posix_spawn_file_actions_destroy(&actions);
  ::close(to_child[0]);
  ::close(from_child[1]);
  to_helper_ = to_child[1];
  from_helper_ = from_child[0];
  if (rc != 0) {
    pid_ = -1;
    throw RendezvousFailure("cannot start " + helper + ": " + std::strerror(rc));
  }
  std::istringstream ready(expect("ready ", answer()));
  std::string hosts;
  ready >> node_id_ >> local_address_ >> hosts;
  hosts_store_ = hosts == "1";
}

RendezvousClient::~RendezvousClient() {
  if (to_helper_ >= 0) ::close(to_helper_);  // end of input: the helper exits
  if (from_helper_ >= 0) ::close(from_helper_);
  // The supervisor may have reaped it already (it waits for any child).
  if (pid_ > 0) ::waitpid(pid_, nullptr, 0);
}

void RendezvousClient::send(const std::string& line) {
  std::string text = line + "\n";
  const char* data = text.data();
  size_t left = text.size();
  while (left > 0) {
    ssize_t written = ::write(to_helper_, data, left);
    if (written < 0 && errno == EINTR) continue;
    if (written <= 0) throw RendezvousFailure("the rendezvous helper is gone");
    data += written;
    left -= static_cast<size_t>(written);
  }
}

std::string RendezvousClient::read_line(LauncherSignals* signals, int* signo) {
  for (;;) {
    if (size_t end = buffer_.find('\n'); end != std::string::npos) {
      std::string line = buffer_.substr(0, end);
      buffer_.erase(0, end + 1);
      return line;
    }
    pollfd fds[2] = {{from_helper_, POLLIN, 0}, {signals ? signals->fd() : -1, POLLIN, 0}};
    if (::poll(fds, signals ? 2 : 1, -1) < 0) {
      if (errno == EINTR) continue;
      throw RendezvousFailure(std::string("poll: ") + std::strerror(errno));
    }
    if (signals && (fds[1].revents & POLLIN)) {
      for (int signal : signals->take()) {
        if (signal != SIGCHLD && *signo == 0) *signo = signal;
      }
      if (*signo != 0) return {};
    }
    if (fds[0].revents == 0) continue;
    char chunk[4096];
    ssize_t got = ::read(from_helper_, chunk, sizeof chunk);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) throw RendezvousFailure("the rendezvous helper (accel-selftest --rendezvous) exited");
    buffer_.append(chunk, static_cast<size_t>(got));
  }
}

std::string RendezvousClient::answer(LauncherSignals* signals, int* signo) {
  for (;;) {
    std::string line = read_line(signals, signo);
    if (signo != nullptr && *signo != 0) return {};
    if (starts_with(line, "event ")) {
      events_.push_back(line.substr(6));
      continue;
    }
    if (starts_with(line, "closed ")) throw RendezvousClosed(line.substr(7));
    if (starts_with(line, "error ")) throw RendezvousFailure(line.substr(6));
    return line;
  }
}

std::string RendezvousClient::expect(const std::string& prefix, const std::string& reply) {
  if (!starts_with(reply, prefix)) throw RendezvousFailure("the rendezvous helper answered: " + reply);
  return reply.substr(prefix.size());
}

std::optional<RoundInfo> RendezvousClient::next_round(LauncherSignals& signals, int& signo) {
  send("next");
  signo = 0;
  std::string reply = answer(&signals, &signo);
  if (signo != 0) {
    send("stop");
    try {
      answer();  // "error stopped", or the round that completed meanwhile
    } catch (const RendezvousFailure&) {
    }
    return std::nullopt;
  }
  std::istringstream fields(expect("round ", reply));
  RoundInfo round;
  fields >> round.round >> round.group_rank >> round.nnodes;
  for (std::string node; fields >> node;) round.nodes.push_back(node);
  return round;
}

void RendezvousClient::publish_master(const RoundInfo& round, const std::string& addr, int port) {
  send("publish " + std::to_string(round.round) + " " + addr + " " + std::to_string(port));
  expect("ok", answer());
}

std::pair<std::string, int> RendezvousClient::wait_for_master(const RoundInfo& round) {
  send("master " + std::to_string(round.round));
  std::istringstream fields(expect("master ", answer()));
  std::pair<std::string, int> master;
  fields >> master.first >> master.second;
  return master;
}

std::optional<std::string> RendezvousClient::check() {
  send("check");
  std::string reply = answer();
  if (reply == "ok") return std::nullopt;
  return expect("change ", reply);
}

void RendezvousClient::leave() {
  send("leave");
  expect("ok", answer());
}

void RendezvousClient::close(const std::string& reason) {
  send("close " + reason);
  expect("ok", answer());
}

}  // namespace accel::cli
