#include "parallel/tp_plan.hpp"

#include "accel/error.hpp"

namespace accel::detail {

namespace {

constexpr std::pair<const char*, TpStyle> kStyles[] = {{"colwise", TpStyle::Colwise},
                                                       {"rowwise", TpStyle::Rowwise},
                                                       {"colwise_rep", TpStyle::ColwiseRep},
                                                       {"sequence_parallel", TpStyle::SequenceParallel}};

std::vector<std::string> components(const std::string& name) {
  std::vector<std::string> parts;
  size_t begin = 0;
  while (true) {
    const size_t dot = name.find('.', begin);
    parts.push_back(name.substr(begin, dot == std::string::npos ? std::string::npos : dot - begin));
    if (dot == std::string::npos) return parts;
    begin = dot + 1;
  }
}

}  // namespace

const char* to_string(TpStyle style) {
  for (const auto& [name, value] : kStyles) {
    if (value == style) return name;
  }
  return "unknown";
}

TpPlan parse_tp_plan(const nlohmann::json& plan) {
  require_arg(plan.is_object(), "tp_plan must be an object of module pattern -> style, got " + plan.dump());
  TpPlan parsed;
  for (const auto& item : plan.items()) {
    const std::string& pattern = item.key();
    const std::string where = "tp_plan entry \"" + pattern + "\"";
    for (const std::string& part : components(pattern)) {
      require_arg(!part.empty(), where + ": an empty name component (patterns are dotted module paths)");
    }
    require_arg(item.value().is_string(), where + ": the style must be a string, got " + item.value().dump());
    const std::string style = item.value().get<std::string>();
    std::optional<TpStyle> found;
    std::string known;
    for (const auto& [name, value] : kStyles) {
      if (style == name) found = value;
      known += (known.empty() ? "" : ", ") + std::string(name);
    }
    require_arg(found.has_value(), where + ": unknown style \"" + style + "\" (known: " + known + ")");
    parsed.push_back({pattern, *found});
  }
  return parsed;
}

std::optional<TpPlan> take_tp_plan(nlohmann::json& spec) {
  if (!spec.is_object()) return std::nullopt;
  auto it = spec.find("tp_plan");
  if (it == spec.end()) return std::nullopt;
  TpPlan plan = parse_tp_plan(*it);
  spec.erase(it);
  return plan;
}

bool tp_pattern_matches(const std::string& pattern, const std::string& module_name) {
  const std::vector<std::string> want = components(pattern), have = components(module_name);
  if (want.size() != have.size()) return false;
  for (size_t i = 0; i < want.size(); ++i) {
    if (want[i] != "*" && want[i] != have[i]) return false;
  }
  return true;
}

}  // namespace accel::detail
