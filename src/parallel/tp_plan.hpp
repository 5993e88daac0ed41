// A tensor-parallel plan: which submodules to split and how, in the
// vocabulary of transformers' base_model_tp_plan and Accelerate:
//   {"h.*.self_attn": "colwise", "h.*.self_attn.out_proj": "rowwise",
//    "h.*.linear1": "colwise", "h.*.linear2": "rowwise"}
// A pattern names a module by its dotted path; "*" stands for exactly one
// component ("h.*.linear1" matches "h.0.linear1", not "h.0.x.linear1").
// A JSON model spec carries one under "tp_plan" (an object spec); without one
// the built-in plan splits every transformer layer (model/tensor_parallel_split.hpp).
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace accel::detail {

enum class TpStyle { Colwise, Rowwise, ColwiseRep, SequenceParallel };
const char* to_string(TpStyle style);

struct TpPlanEntry {
  std::string pattern;
  TpStyle style;
};
using TpPlan = std::vector<TpPlanEntry>;

// Throws InvalidArgument naming the entry: a plan that is not an object, an
// empty pattern or component, a style that is not a string, or a style name
// outside the vocabulary (listing it).
TpPlan parse_tp_plan(const nlohmann::json& plan);
// Removes "tp_plan" from an object spec and parses it; nullopt when absent.
std::optional<TpPlan> take_tp_plan(nlohmann::json& spec);

bool tp_pattern_matches(const std::string& pattern, const std::string& module_name);

}  // namespace accel::detail
