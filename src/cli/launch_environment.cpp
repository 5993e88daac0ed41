#include "cli/launch_environment.hpp"

#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <ostream>
#include <stdexcept>
#include <thread>

namespace accel::cli {

namespace {

// Quoted for a POSIX shell when needed, so a printed command line can be pasted back.
std::string shell_quoted(const std::string& word) {
  bool plain = !word.empty() && word.find_first_not_of(
                                    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                    "0123456789_-+=/.,:@%") == std::string::npos;
  if (plain) return word;
  std::string quoted = "'";
  for (char c : word) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

// A closing file descriptor, so that every path out of reserve_port closes what it opened.
struct Descriptor {
  int fd;
  explicit Descriptor(int value) : fd(value) {}
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;
  ~Descriptor() {
    if (fd >= 0) ::close(fd);
  }
  void close() {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
};

int bound_port(int fd) {
  sockaddr_storage bound{};
  socklen_t length = sizeof bound;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &length) != 0) return 0;
  char service[NI_MAXSERV];
  if (::getnameinfo(reinterpret_cast<sockaddr*>(&bound), length, nullptr, 0, service, sizeof service, NI_NUMERICSERV) !=
      0) {
    return 0;
  }
  return std::atoi(service);
}

// A port the kernel chose on `candidate`'s address, left in TIME_WAIT (0 when
// nothing binds there). A port that was merely bound and closed is free for
// anyone: under parallel jobs another process's connect() or bind(0) took it
// before rank 0's store listened on it (EADDRINUSE, seen in CI). A connection
// accepted on the port and closed from that side first leaves the port in
// TIME_WAIT for a minute. Until then the kernel hands it to no connect() and
// no bind(0), while a listener that sets SO_REUSEADDR binds it, as c10d's
// TCPStore (both LibTorch worlds) and libuv's do. This is how
// ephemeral-port-reserve (Yelp) reserves a port without holding a socket.
int reserve_port(const addrinfo& candidate) {
  Descriptor listener(::socket(candidate.ai_family, candidate.ai_socktype | SOCK_CLOEXEC, candidate.ai_protocol));
  if (listener.fd < 0) return 0;
  int on = 1;
  ::setsockopt(listener.fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
  if (::bind(listener.fd, candidate.ai_addr, candidate.ai_addrlen) != 0) return 0;
  const int port = bound_port(listener.fd);
  if (port == 0 || ::listen(listener.fd, 1) != 0) return port;
  sockaddr_storage address{};
  socklen_t length = sizeof address;
  if (::getsockname(listener.fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) return port;
  Descriptor client(::socket(candidate.ai_family, candidate.ai_socktype | SOCK_CLOEXEC, candidate.ai_protocol));
  if (client.fd < 0 || ::connect(client.fd, reinterpret_cast<sockaddr*>(&address), length) != 0) return port;
  Descriptor accepted(::accept4(listener.fd, nullptr, nullptr, SOCK_CLOEXEC));
  if (accepted.fd < 0) return port;
  // The side that closes first keeps the address in TIME_WAIT: the accepted
  // socket, whose local port is the one reserved.
  accepted.close();
  char ignored;
  (void)::recv(client.fd, &ignored, 1, 0);  // the FIN: 0 bytes, so the close below is the second
  return port;
}

}  // namespace

std::map<std::string, std::string> rank_environment(const LaunchConfig& config, int local_rank) {
  std::map<std::string, std::string> env{
      {"RANK", std::to_string(config.global_rank(local_rank))},
      {"WORLD_SIZE", std::to_string(config.world_size())},
      {"LOCAL_RANK", std::to_string(local_rank)},
      {"LOCAL_WORLD_SIZE", std::to_string(config.nproc_per_node)},
      {"GROUP_RANK", std::to_string(config.node_rank)},
      {"GROUP_WORLD_SIZE", std::to_string(config.nnodes)},
      {"MASTER_ADDR", config.master_addr},
      {"MASTER_PORT", std::to_string(config.master_port)},
  };
  if (config.omp_num_threads) env["OMP_NUM_THREADS"] = std::to_string(*config.omp_num_threads);
  // Accelerate's launcher variables, read by the library (src/state).
  env["ACCELERATE_MIXED_PRECISION"] = config.mixed_precision;
  env["ACCELERATE_USE_CPU"] = config.use_cpu ? "true" : "false";
  // Without --debug the ranks inherit the launcher's own ACCELERATE_DEBUG_MODE.
  if (config.debug) env["ACCELERATE_DEBUG_MODE"] = "true";
  if (config.gradient_accumulation_steps) {
    env["ACCELERATE_GRADIENT_ACCUMULATION_STEPS"] = std::to_string(*config.gradient_accumulation_steps);
  }
  if (config.gpu_ids) env["CUDA_VISIBLE_DEVICES"] = *config.gpu_ids;
  for (const auto& [name, value] : config.sharding_env) env[name] = value;
  for (const auto& [name, value] : config.parallelism_env) env[name] = value;
  // torchrun's names: a program can tell a restarted attempt from the first.
  env["TORCHELASTIC_RESTART_COUNT"] = std::to_string(config.restart_count);
  env["TORCHELASTIC_MAX_RESTARTS"] = std::to_string(config.max_restarts);
  env["TORCHELASTIC_RUN_ID"] = config.elastic.run_id;
  // torchrun's one role (--role, "default") spans every rank.
  env["ROLE_NAME"] = config.role;
  env["ROLE_RANK"] = std::to_string(config.global_rank(local_rank));
  env["ROLE_WORLD_SIZE"] = std::to_string(config.world_size());
  // The launcher starts every line a rank writes with "[rank N] " (supervisor.cpp),
  // so the library's logger leaves its own prefix out (src/tracking/logging.cpp).
  env["ACCEL_LAUNCH_PREFIXES_LINES"] = "1";
  return env;
}

std::optional<unsigned> default_omp_num_threads(int nproc_per_node, bool omp_num_threads_set,
                                                unsigned hardware_threads) {
  if (nproc_per_node <= 1 || omp_num_threads_set) return std::nullopt;
  return std::max(1u, hardware_threads / static_cast<unsigned>(nproc_per_node));
}

int pick_free_port(const std::string& addr) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;  // IPv6 master addresses work too
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (int rc = ::getaddrinfo(addr.c_str(), "0", &hints, &found); rc != 0) {
    throw std::runtime_error("cannot resolve --master_addr " + addr + ": " + ::gai_strerror(rc));
  }
  int port = 0;
  for (addrinfo* candidate = found; candidate != nullptr && port == 0; candidate = candidate->ai_next) {
    port = reserve_port(*candidate);
  }
  ::freeaddrinfo(found);
  if (port == 0) throw std::runtime_error("cannot bind a free port on --master_addr " + addr);
  return port;
}

void resolve_defaults(LaunchConfig& config, std::ostream& notices) {
  if (config.master_port == 0) config.master_port = pick_free_port(config.master_addr);
  if (config.omp_num_threads) return;  // --num_cpu_threads_per_process
  unsigned hardware_threads = std::max(1u, std::thread::hardware_concurrency());
  config.omp_num_threads =
      default_omp_num_threads(config.nproc_per_node, std::getenv("OMP_NUM_THREADS") != nullptr, hardware_threads);
  if (config.omp_num_threads && !config.quiet) {
    notices << "accel launch: OMP_NUM_THREADS is not set; each of the " << config.nproc_per_node << " ranks gets "
            << *config.omp_num_threads << " (" << hardware_threads
            << " hardware threads shared); set OMP_NUM_THREADS to choose\n";
  }
}

void print_launch_plan(const LaunchConfig& config, std::ostream& out) {
  const ElasticSettings& elastic = config.elastic;
  if (elastic.enabled) {
    out << "accel launch --dry_run: would join the c10d rendezvous '" << elastic.run_id << "' at "
        << elastic.endpoint_host << ':' << elastic.endpoint_port << " for " << elastic.nodes.min << " to "
        << elastic.nodes.max << " node(s), and start " << config.nproc_per_node
        << " rank(s) per round; shown below as node " << config.node_rank << " of " << config.nnodes
        << " (the rendezvous decides); join_timeout " << elastic.join_timeout_s << " s, last_call_timeout "
        << elastic.last_call_timeout_s << " s, keep_alive " << elastic.keep_alive_interval_s << " s x "
        << elastic.keep_alive_max_attempt << ", monitor_interval " << config.monitor_interval_s << " s\n";
  } else {
    out << "accel launch --dry_run: would start " << config.nproc_per_node << " rank(s) on node " << config.node_rank
        << " of " << config.nnodes << "; grace period " << config.grace_period_s << " s\n";
  }
  out << "settings (value, and where it came from):\n";
  for (const auto& [name, value] : config.origins) out << "  " << name << " = " << value << '\n';
  std::string command = shell_quoted(config.program);
  for (const auto& arg : config.program_args) command += ' ' + shell_quoted(arg);
  out << "command: " << command << '\n';
  // One line per rank, ready to paste into a shell: its variables, then the command.
  for (int local_rank = 0; local_rank < config.nproc_per_node; ++local_rank) {
    out << "rank " << config.global_rank(local_rank) << ':';
    for (const auto& [key, value] : rank_environment(config, local_rank)) {
      out << ' ' << key << '=' << shell_quoted(value);
    }
    out << ' ' << command << '\n';
  }
}

}  // namespace accel::cli
