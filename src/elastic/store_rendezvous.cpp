#include "elastic/store_rendezvous.hpp"

#include <ifaddrs.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <set>

#include "state/local_address.hpp"

namespace accel::detail::elastic {

namespace {

constexpr auto kPollInterval = std::chrono::milliseconds(100);

int64_t wall_clock_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::vector<uint8_t> bytes_of(const std::string& text) { return {text.begin(), text.end()}; }
std::string text_of(const std::vector<uint8_t>& bytes) { return {bytes.begin(), bytes.end()}; }

std::string endpoint_text(const RendezvousOptions& options) {
  return options.endpoint_host + ":" + std::to_string(options.endpoint_port);
}

std::string list(const std::set<std::string>& nodes) {
  std::string text;
  for (const auto& node : nodes) text += (text.empty() ? "" : ", ") + node;
  return text.empty() ? "none" : text;
}

std::set<std::string> keys_of(const std::map<std::string, int>& participants) {
  std::set<std::string> nodes;
  for (const auto& entry : participants) nodes.insert(entry.first);
  return nodes;
}

// The numeric addresses of `host`, and of this machine's interfaces.
std::set<std::string> numeric_addresses(const std::string& host) {
  std::set<std::string> addresses;
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.c_str(), nullptr, &hints, &found) != 0) return addresses;
  for (addrinfo* entry = found; entry != nullptr; entry = entry->ai_next) {
    char text[NI_MAXHOST];
    if (::getnameinfo(entry->ai_addr, entry->ai_addrlen, text, sizeof text, nullptr, 0, NI_NUMERICHOST) == 0) {
      addresses.insert(text);
    }
  }
  ::freeaddrinfo(found);
  return addresses;
}

std::set<std::string> interface_addresses() {
  std::set<std::string> addresses;
  ifaddrs* interfaces = nullptr;
  if (::getifaddrs(&interfaces) != 0) return addresses;
  for (ifaddrs* entry = interfaces; entry != nullptr; entry = entry->ifa_next) {
    if (entry->ifa_addr == nullptr) continue;
    const int family = entry->ifa_addr->sa_family;
    if (family != AF_INET && family != AF_INET6) continue;
    const socklen_t length = family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
    char text[NI_MAXHOST];
    if (::getnameinfo(entry->ifa_addr, length, text, sizeof text, nullptr, 0, NI_NUMERICHOST) == 0) {
      addresses.insert(text);
    }
  }
  ::freeifaddrs(interfaces);
  return addresses;
}

// torchrun's rule for who hosts the c10d rendezvous store: the machine the
// endpoint names (a loopback address, or one of this machine's addresses).
bool endpoint_is_this_machine(const std::string& host) {
  if (c10d_adapter::is_loopback(host)) return true;
  const std::set<std::string> local = interface_addresses();
  for (const auto& address : numeric_addresses(host)) {
    if (local.count(address) != 0 || c10d_adapter::is_loopback(address)) return true;
  }
  return false;
}

// Whether something accepts connections at host:port already (another agent of
// this machine hosting the store): then this agent connects instead of trying to
// bind, which c10d would log as three errors.
bool someone_listens(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found) != 0) return false;
  bool listening = false;
  for (addrinfo* entry = found; entry != nullptr && !listening; entry = entry->ai_next) {
    int fd = ::socket(entry->ai_family, entry->ai_socktype | SOCK_CLOEXEC, entry->ai_protocol);
    if (fd < 0) continue;
    listening = ::connect(fd, entry->ai_addr, entry->ai_addrlen) == 0;
    ::close(fd);
  }
  ::freeaddrinfo(found);
  return listening;
}

}  // namespace

StoreRendezvous::StoreRendezvous(RendezvousOptions options) : options_(std::move(options)) {
  const std::string endpoint = endpoint_text(options_);
  if (numeric_addresses(options_.endpoint_host).empty()) {
    throw RendezvousError("the rendezvous endpoint " + endpoint + " does not resolve to an address");
  }
  local_address_ = local_address_towards(options_.endpoint_host);
  if (local_address_.empty())
    throw RendezvousError("no route from this machine to the rendezvous endpoint " + endpoint);
  // torchrun's "<host>_<pid>_<local id>": unique even for two agents in one process.
  static std::atomic<int> agents_in_this_process{0};
  node_ = local_address_ + "_" + std::to_string(::getpid()) + "_" + std::to_string(agents_in_this_process++);

  const bool host = options_.is_host.value_or(endpoint_is_this_machine(options_.endpoint_host));
  c10d_adapter::StorePtr connection;
  if (host && !someone_listens(options_.endpoint_host, options_.endpoint_port)) {
    try {
      server_ =
          c10d_adapter::make_tcp_store(options_.endpoint_host, options_.endpoint_port, true, options_.store_timeout);
      connection = server_;
    } catch (const std::exception& error) {
      // Another agent on this machine hosts it already (the port is taken).
      if (options_.is_host.value_or(false)) {
        throw RendezvousError("cannot host the rendezvous store at " + endpoint + ": " + error.what());
      }
    }
  }
  try {
    if (!connection) {
      connection =
          c10d_adapter::make_tcp_store(options_.endpoint_host, options_.endpoint_port, false, options_.store_timeout);
    }
    const std::string prefix = "accel/rdzv/" + options_.run_id;
    store_ = c10d_adapter::make_prefix_store(prefix, connection);
    // The first agent creates the state; compare-and-set leaves an existing one alone.
    store_->compareSet("state", {}, bytes_of(RendezvousState().to_json()));
    store_->add("heartbeat/" + node_, 1);
    auto beat_connection = c10d_adapter::make_prefix_store(
        prefix,
        c10d_adapter::make_tcp_store(options_.endpoint_host, options_.endpoint_port, false, options_.store_timeout));
    beat_thread_ = std::thread([this, beat_connection] {
      std::unique_lock<std::mutex> lock(beat_mutex_);
      while (beating_) {
        beat_wakeup_.wait_for(lock, options_.keep_alive_interval, [this] { return !beating_; });
        if (!beating_) break;
        try {
          beat_connection->add("heartbeat/" + node_, 1);
        } catch (const std::exception&) {
          break;  // the store is gone: the main thread finds out at its next call
        }
      }
    });
  } catch (const RendezvousError&) {
    throw;
  } catch (const std::exception& error) {
    throw RendezvousError("no rendezvous store answers at " + endpoint + " within " +
                          std::to_string(options_.store_timeout.count() / 1000) + " s: " + error.what());
  }
}

StoreRendezvous::~StoreRendezvous() {
  {
    std::lock_guard<std::mutex> lock(beat_mutex_);
    beating_ = false;
  }
  beat_wakeup_.notify_all();
  if (beat_thread_.joinable()) beat_thread_.join();
}

RendezvousState StoreRendezvous::read_state() { return RendezvousState::from_json(text_of(store_->get("state"))); }

RendezvousState StoreRendezvous::update(const std::function<bool(RendezvousState&)>& change) {
  for (;;) {
    const std::vector<uint8_t> current = store_->get("state");
    RendezvousState state = RendezvousState::from_json(text_of(current));
    if (!change(state)) return state;
    const std::vector<uint8_t> desired = bytes_of(state.to_json());
    if (store_->compareSet("state", current, desired) == desired) return state;
    // Another agent changed it first: apply the change to what it stored.
  }
}

void StoreRendezvous::remove_silent_nodes(const RendezvousState& state) {
  const auto now = std::chrono::steady_clock::now();
  const auto silence_limit = options_.keep_alive_interval * options_.keep_alive_max_attempt;
  std::set<std::string> present = keys_of(state.participants);
  present.insert(state.wait_list.begin(), state.wait_list.end());
  present.erase(node_);
  for (auto entry = seen_.begin(); entry != seen_.end();) {
    entry = present.count(entry->first) != 0 ? std::next(entry) : seen_.erase(entry);
  }
  for (const auto& node : present) {
    const int64_t count = store_->add("heartbeat/" + node, 0);
    Seen& seen = seen_[node];
    if (seen.count != count) {
      seen = Seen{count, now};
      continue;
    }
    if (now - seen.changed < silence_limit) continue;
    char silent_s[32];
    std::snprintf(silent_s, sizeof silent_s, "%.1f", std::chrono::duration<double>(now - seen.changed).count());
    RendezvousState after =
        update([&](RendezvousState& changed) { return remove_node(changed, node, options_.limits); });
    events_.push_back("node " + node + " sent no heartbeat for " + std::string(silent_s) +
                      " s: removed from the rendezvous (round " + std::to_string(after.round) + ")");
    seen_.erase(node);
  }
}

Round StoreRendezvous::next_round(const std::function<bool()>& stop) {
  update([&](RendezvousState& state) { return remove_node(state, node_, options_.limits); });
  joined_round_.reset();
  round_nodes_.clear();
  const auto deadline = std::chrono::steady_clock::now() + options_.join_timeout;
  for (;;) {
    remove_silent_nodes(read_state());
    JoinStep step = JoinStep::kWait;
    RendezvousState state = update([&](RendezvousState& changed) {
      step = join_step(changed, node_, options_.limits, wall_clock_ms());
      return step == JoinStep::kChanged;
    });
    if (step == JoinStep::kChanged) continue;  // stored: take the next step at once
    if (step == JoinStep::kClosed) throw RendezvousClosed("the rendezvous was closed: " + state.closed_reason);
    if (step == JoinStep::kDone) {
      Round round;
      round.round = state.round;
      round.nnodes = static_cast<int>(state.participants.size());
      round.group_rank = state.participants.at(node_);
      round.nodes.resize(state.participants.size());
      for (const auto& [node, rank] : state.participants) round.nodes.at(static_cast<size_t>(rank)) = node;
      joined_round_ = state.round;
      round_nodes_ = round.nodes;
      return round;
    }
    if (stop && stop()) throw RendezvousError("stopped while waiting for the rendezvous");
    if (std::chrono::steady_clock::now() >= deadline) {
      throw RendezvousError("rendezvous '" + options_.run_id + "' at " + endpoint_text(options_) + ": " +
                            std::to_string(state.participants.size()) + " node(s) of at least " +
                            std::to_string(options_.limits.min_nodes) + " joined within join_timeout " +
                            std::to_string(options_.join_timeout.count() / 1000) +
                            " s (joined: " + list(keys_of(state.participants)) +
                            "; waiting for the next round: " + list(state.wait_list) + ")");
    }
    std::this_thread::sleep_for(kPollInterval);
  }
}

void StoreRendezvous::publish_master(const Round& round, const std::string& addr, int port) {
  store_->set("round/" + std::to_string(round.round) + "/master", bytes_of(addr + ":" + std::to_string(port)));
}

std::pair<std::string, int> StoreRendezvous::wait_for_master(const Round& round) {
  const std::string key = "round/" + std::to_string(round.round) + "/master";
  try {
    store_->wait({key}, options_.store_timeout);
  } catch (const std::exception& error) {
    throw RendezvousError("rank 0's node" + (round.nodes.empty() ? "" : " (" + round.nodes.front() + ")") +
                          " did not publish its address for round " + std::to_string(round.round) + " within " +
                          std::to_string(options_.store_timeout.count() / 1000) + " s: " + error.what());
  }
  const std::string value = text_of(store_->get(key));
  const size_t colon = value.rfind(':');
  return {value.substr(0, colon), std::stoi(value.substr(colon + 1))};
}

std::optional<std::string> StoreRendezvous::membership_change() {
  remove_silent_nodes(read_state());
  const RendezvousState state = read_state();
  if (state.closed) return "the rendezvous was closed: " + state.closed_reason;
  if (!joined_round_) return std::nullopt;
  if (state.round != *joined_round_) return "round " + std::to_string(state.round) + " of the rendezvous began";
  if (state.participants.count(node_) == 0) {
    return "this node was removed from round " + std::to_string(state.round) + " (its heartbeats were not seen)";
  }
  std::set<std::string> left;
  for (const auto& node : round_nodes_) {
    if (state.participants.count(node) == 0 && state.finished.count(node) == 0) left.insert(node);
  }
  if (!left.empty()) return "node(s) " + list(left) + " left round " + std::to_string(state.round);
  if (!state.wait_list.empty()) return "node(s) " + list(state.wait_list) + " wait to join";
  return std::nullopt;
}

void StoreRendezvous::leave() {
  {
    std::lock_guard<std::mutex> lock(beat_mutex_);
    beating_ = false;
  }
  beat_wakeup_.notify_all();
  update([&](RendezvousState& state) { return remove_node(state, node_, options_.limits, /*finished=*/true); });
  joined_round_.reset();
  if (!hosts_store()) return;
  // torchrun's exit barrier: the store ends with this process, so it waits for
  // the others to finish and leave too (those that vanish are removed once their
  // heartbeats stop), up to 5 minutes.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(5);
  while (std::chrono::steady_clock::now() < deadline) {
    RendezvousState state = read_state();
    if (state.closed || state.participants.empty()) return;
    remove_silent_nodes(state);
    std::this_thread::sleep_for(kPollInterval);
  }
}

void StoreRendezvous::close(const std::string& reason) {
  update([&](RendezvousState& state) {
    if (state.closed) return false;
    elastic::close(state, reason);
    return true;
  });
}

std::vector<std::string> StoreRendezvous::take_events() { return std::exchange(events_, {}); }

}  // namespace accel::detail::elastic
