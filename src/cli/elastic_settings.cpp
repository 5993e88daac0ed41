#include "cli/elastic_settings.hpp"

#include <cerrno>
#include <cstdlib>
#include <stdexcept>

namespace accel::cli {

namespace {

int positive_integer(const std::string& text, const std::string& what) {
  char* end = nullptr;
  errno = 0;
  long value = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno != 0 || value < 1 || value > (1 << 20)) {
    throw std::invalid_argument(what + " \"" + text + "\" is not a whole number of at least 1");
  }
  return static_cast<int>(value);
}

double seconds(const std::string& text, const std::string& key) {
  char* end = nullptr;
  double value = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !(value > 0)) {
    throw std::invalid_argument("rdzv_conf " + key + "=" + text + ": not a number of seconds above 0");
  }
  return value;
}

}  // namespace

NodeCount parse_node_count(const std::string& text) {
  const size_t colon = text.find(':');
  if (colon == std::string::npos) {
    int count = positive_integer(text, "the node count");
    return {count, count};
  }
  NodeCount nodes{positive_integer(text.substr(0, colon), "the least node count in \"" + text + "\","),
                  positive_integer(text.substr(colon + 1), "the largest node count in \"" + text + "\",")};
  if (nodes.min > nodes.max) {
    throw std::invalid_argument("\"" + text + "\": the least node count " + std::to_string(nodes.min) +
                                " is above the largest " + std::to_string(nodes.max) + " (give MIN:MAX)");
  }
  return nodes;
}

bool is_elastic_backend(const std::string& backend) {
  if (backend == "static") return false;
  if (backend == "c10d") return true;
  throw std::invalid_argument("rendezvous backend \"" + backend +
                              "\" is not supported; the supported ones are static (the default) and c10d");
}

void parse_endpoint(const std::string& text, ElasticSettings& settings) {
  std::string host = text, port;
  if (!text.empty() && text.front() == '[') {  // [IPv6]:PORT
    const size_t close = text.find(']');
    if (close == std::string::npos) throw std::invalid_argument("rendezvous endpoint \"" + text + "\" lacks its ']'");
    host = text.substr(1, close - 1);
    if (close + 1 < text.size()) {
      if (text[close + 1] != ':') throw std::invalid_argument("rendezvous endpoint \"" + text + "\": ':' after ']'");
      port = text.substr(close + 2);
    }
  } else if (const size_t colon = text.rfind(':'); colon != std::string::npos && text.find(':') == colon) {
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
  }
  if (host.empty()) throw std::invalid_argument("rendezvous endpoint \"" + text + "\" names no host");
  settings.endpoint_host = host;
  if (port.empty()) return;
  const int number = positive_integer(port, "the port of rendezvous endpoint \"" + text + "\",");
  if (number > 65535) throw std::invalid_argument("rendezvous endpoint \"" + text + "\": port above 65535");
  settings.endpoint_port = number;
}

void parse_rdzv_conf(const std::string& text, ElasticSettings& settings) {
  size_t start = 0;
  while (start < text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    const std::string item = text.substr(start, comma - start);
    start = comma + 1;
    if (item.empty()) continue;
    const size_t equals = item.find('=');
    if (equals == std::string::npos) throw std::invalid_argument("rdzv_conf item \"" + item + "\" is not key=value");
    const std::string key = item.substr(0, equals), value = item.substr(equals + 1);
    if (key == "join_timeout") {
      settings.join_timeout_s = seconds(value, key);
    } else if (key == "last_call_timeout") {
      settings.last_call_timeout_s = seconds(value, key);
    } else if (key == "keep_alive_interval") {
      settings.keep_alive_interval_s = seconds(value, key);
    } else if (key == "keep_alive_max_attempt") {
      settings.keep_alive_max_attempt = positive_integer(value, "rdzv_conf keep_alive_max_attempt");
    } else if (key == "timeout" || key == "read_timeout") {
      settings.timeout_s = seconds(value, key);
    } else if (key == "close_timeout") {
      seconds(value, key);  // checked; closing here does not wait for anybody
    } else if (key == "is_host") {
      if (value == "true" || value == "1" || value == "True") {
        settings.is_host = true;
      } else if (value == "false" || value == "0" || value == "False") {
        settings.is_host = false;
      } else {
        throw std::invalid_argument("rdzv_conf is_host=" + value + ": not true or false");
      }
    } else {
      throw std::invalid_argument("rdzv_conf key \"" + key +
                                  "\" is not known; the known ones are join_timeout, last_call_timeout, "
                                  "keep_alive_interval, keep_alive_max_attempt, timeout, read_timeout, close_timeout "
                                  "and is_host");
    }
  }
}

}  // namespace accel::cli
