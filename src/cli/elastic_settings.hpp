// The settings of an elastic launch (`--rdzv_backend c10d`, `--nnodes MIN:MAX`):
// torchrun's rendezvous flags, parsed and checked. docs/launch.md, "Elastic jobs".
#pragma once

#include <optional>
#include <string>

namespace accel::cli {

struct NodeCount {
  int min = 1;
  int max = 1;
  bool is_range() const { return min != max; }
};

// "N" or "MIN:MAX" (torchrun's --nnodes). Throws std::invalid_argument naming
// the text: not a number, below 1, or MIN above MAX.
NodeCount parse_node_count(const std::string& text);

struct ElasticSettings {
  bool enabled = false;  // the c10d rendezvous backend: node ranks and the world come from it
  NodeCount nodes;
  std::string endpoint_host;  // --rdzv_endpoint, else --master_addr
  int endpoint_port = 29400;
  std::string run_id = "none";
  // --rdzv_conf, torchrun's keys and defaults.
  double join_timeout_s = 600;
  double last_call_timeout_s = 30;
  double keep_alive_interval_s = 5;
  int keep_alive_max_attempt = 3;
  double timeout_s = 60;        // connecting to the store and reading from it
  std::optional<bool> is_host;  // host the store here; unset: when the endpoint is this machine
};

// The rendezvous backends there are: "static" (the default: --node_rank and
// --master_addr decide) and "c10d". Throws std::invalid_argument naming the
// supported ones for anything else (etcd, etcd-v2).
bool is_elastic_backend(const std::string& backend);

// "HOST[:PORT]" or "[IPV6]:PORT"; the port defaults to torchrun's 29400.
// Throws std::invalid_argument naming the text.
void parse_endpoint(const std::string& text, ElasticSettings& settings);

// "key=value,key=value": join_timeout, last_call_timeout, keep_alive_interval,
// keep_alive_max_attempt, timeout (seconds; read_timeout is taken as timeout),
// is_host (true/false), close_timeout (accepted; nothing waits on closing here).
// Throws std::invalid_argument naming an unknown key or a bad value.
void parse_rdzv_conf(const std::string& text, ElasticSettings& settings);

}  // namespace accel::cli
