// torchrun's rendezvous flags as `accel launch` reads them (src/cli/elastic_settings.hpp),
// and their place among the launch settings (launch_settings.hpp).
#include <gtest/gtest.h>

#include <map>
#include <stdexcept>

#include "cli/elastic_settings.hpp"
#include "cli/launch_settings.hpp"
#include "cli/launch_options.hpp"

namespace accel::cli {
namespace {

std::string error_of(const std::function<void()>& call) {
  try {
    call();
  } catch (const std::exception& error) {
    return error.what();
  }
  return "no error";
}

TEST(ElasticSettings, NodeCounts) {
  EXPECT_EQ(parse_node_count("3").min, 3);
  EXPECT_FALSE(parse_node_count("3").is_range());
  NodeCount range = parse_node_count("2:4");
  EXPECT_EQ(range.min, 2);
  EXPECT_EQ(range.max, 4);
  EXPECT_NE(error_of([] { parse_node_count("3:2"); }).find("\"3:2\": the least node count 3 is above the largest 2"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_node_count("0"); }).find("\"0\" is not a whole number of at least 1"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_node_count("2:x"); }).find("\"x\""), std::string::npos);
}

TEST(ElasticSettings, BackendsAndEndpoints) {
  EXPECT_FALSE(is_elastic_backend("static"));
  EXPECT_TRUE(is_elastic_backend("c10d"));
  EXPECT_NE(error_of([] {
              is_elastic_backend("etcd");
            }).find("\"etcd\" is not supported; the supported ones are static (the default) and c10d"),
            std::string::npos);
  ElasticSettings settings;
  parse_endpoint("node1", settings);
  EXPECT_EQ(settings.endpoint_host, "node1");
  EXPECT_EQ(settings.endpoint_port, 29400);
  parse_endpoint("10.0.0.1:1234", settings);
  EXPECT_EQ(settings.endpoint_host, "10.0.0.1");
  EXPECT_EQ(settings.endpoint_port, 1234);
  parse_endpoint("[fd00::1]:99", settings);
  EXPECT_EQ(settings.endpoint_host, "fd00::1");
  EXPECT_EQ(settings.endpoint_port, 99);
  EXPECT_NE(error_of([&] { parse_endpoint(":80", settings); }).find("names no host"), std::string::npos);
  EXPECT_NE(error_of([&] { parse_endpoint("h:70000", settings); }).find("port above 65535"), std::string::npos);
}

TEST(ElasticSettings, RdzvConf) {
  ElasticSettings settings;
  parse_rdzv_conf("join_timeout=5,last_call_timeout=0.5,keep_alive_interval=1,keep_alive_max_attempt=2,is_host=false",
                  settings);
  EXPECT_EQ(settings.join_timeout_s, 5);
  EXPECT_EQ(settings.last_call_timeout_s, 0.5);
  EXPECT_EQ(settings.keep_alive_interval_s, 1);
  EXPECT_EQ(settings.keep_alive_max_attempt, 2);
  EXPECT_EQ(settings.is_host, false);
  EXPECT_NE(error_of([&] { parse_rdzv_conf("joint_timeout=5", settings); }).find("\"joint_timeout\" is not known"),
            std::string::npos);
  EXPECT_NE(error_of([&] { parse_rdzv_conf("join_timeout=-1", settings); }).find("join_timeout=-1"), std::string::npos);
}

LaunchConfig resolve(LaunchFlags flags, std::map<std::string, std::string> environment = {}) {
  flags.program = "/bin/true";
  flags.config_file = "";  // none: not the default file of whoever runs the tests
  std::vector<std::string> warnings;
  EnvLookup lookup = [environment](const std::string& name) -> std::optional<std::string> {
    auto found = environment.find(name);
    return found == environment.end() ? std::nullopt : std::optional<std::string>(found->second);
  };
  return resolve_settings(flags, lookup, warnings);
}

TEST(ElasticSettings, ResolvedFromFlagsAndPetVariables) {
  LaunchFlags flags;
  flags.nnodes = "2:3";
  flags.rdzv_backend = "c10d";
  flags.rdzv_endpoint = "10.0.0.1:29400";
  flags.rdzv_conf = "last_call_timeout=1";
  LaunchConfig config = resolve(flags);
  EXPECT_TRUE(config.elastic.enabled);
  EXPECT_EQ(config.elastic.nodes.min, 2);
  EXPECT_EQ(config.elastic.nodes.max, 3);
  EXPECT_EQ(config.elastic.endpoint_host, "10.0.0.1");
  EXPECT_EQ(config.elastic.last_call_timeout_s, 1);
  EXPECT_EQ(config.elastic.run_id, "none");

  // A Kubernetes elastic PyTorchJob gives these to every pod, and no flags.
  config = resolve(LaunchFlags{}, {{"PET_NNODES", "1:4"},
                                   {"PET_RDZV_BACKEND", "c10d"},
                                   {"PET_RDZV_ENDPOINT", "job-worker-0:23456"},
                                   {"PET_RDZV_ID", "job"},
                                   {"PET_NPROC_PER_NODE", "2"}});
  EXPECT_TRUE(config.elastic.enabled);
  EXPECT_EQ(config.elastic.nodes.max, 4);
  EXPECT_EQ(config.elastic.endpoint_host, "job-worker-0");
  EXPECT_EQ(config.elastic.endpoint_port, 23456);
  EXPECT_EQ(config.elastic.run_id, "job");
  EXPECT_EQ(config.nproc_per_node, 2);

  // Without --rdzv_endpoint: Accelerate's main_process_ip:main_process_port.
  LaunchFlags plain;
  plain.rdzv_backend = "c10d";
  plain.master_addr = "10.1.1.1";
  plain.master_port = 3000;
  config = resolve(plain);
  EXPECT_EQ(config.elastic.endpoint_host, "10.1.1.1");
  EXPECT_EQ(config.elastic.endpoint_port, 3000);
}

TEST(ElasticSettings, BadCombinationsAreNamed) {
  LaunchFlags range;
  range.nnodes = "2:3";
  EXPECT_NE(error_of([&] { resolve(range); }).find("2:3 (a range of machines) needs --rdzv_backend c10d"),
            std::string::npos);
  LaunchFlags reversed;
  reversed.nnodes = "3:2";
  reversed.rdzv_backend = "c10d";
  EXPECT_NE(error_of([&] { resolve(reversed); }).find("the least node count 3 is above the largest 2"),
            std::string::npos);
  LaunchFlags with_rank;
  with_rank.rdzv_backend = "c10d";
  with_rank.node_rank = 1;
  EXPECT_NE(error_of([&] { resolve(with_rank); }).find("no effect with --rdzv_backend c10d"), std::string::npos);
  LaunchFlags etcd;
  etcd.rdzv_backend = "etcd-v2";
  EXPECT_NE(error_of([&] { resolve(etcd); }).find("supported ones are static (the default) and c10d"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              resolve(LaunchFlags{}, {{"PET_RDZV_BACKEND", "etcd"}, {"PET_NNODES", "1:2"}});
            }).find("PET_RDZV_BACKEND"),
            std::string::npos);
}

}  // namespace
}  // namespace accel::cli
