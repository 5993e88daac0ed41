// Sharded state cut again between layouts (src/checkpoint/shard_layout.hpp,
// optimizer_reshard.hpp): for every pair of layouts (whole; ZeRO flat and
// FULL_SHARD units over 1 to 4 processes), each new process's state must be
// bitwise its part of the whole state, cut by an independent reference here
// (pad, place, narrow); padding is zero; only the saved processes holding part
// of the new range are read.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>
#include <vector>

#include "accel/error.hpp"
#include "checkpoint/optimizer_reshard.hpp"
#include "checkpoint/shard_layout.hpp"

namespace accel::detail {
namespace {

using Dict = c10::impl::GenericDict;

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// dist_sharding's model (83 elements) in two wrap units, plus a scalar.
const std::vector<LayoutParam> kParams{
    {"0.weight", {8, 6}, 48}, {"0.bias", {8}, 8}, {"2.weight", {3, 8}, 24}, {"2.bias", {3}, 3}, {"scale", {}, 1}};
const std::vector<std::vector<size_t>> kUnits{{0, 1}, {2, 3, 4}};

nlohmann::json units_json(int group) {
  nlohmann::json units = nlohmann::json::array();
  int64_t shard_offset = 0;
  for (const auto& members : kUnits) {
    int64_t total = 0;
    nlohmann::json params = nlohmann::json::array();
    for (size_t p : members) {
      params.push_back({{"name", kParams[p].name}, {"shape", kParams[p].shape}, {"offset", total}});
      total += kParams[p].numel;
    }
    const int64_t chunk = ceil_div(total, group);
    units.push_back({{"name", "unit"}, {"chunk", chunk}, {"shard_offset", shard_offset}, {"params", params}});
    shard_offset += chunk;
  }
  return units;
}

// The reference cut of one per-element quantity, given whole per parameter.
at::Tensor reference(const std::vector<at::Tensor>& whole, const std::string& kind, int group, int member) {
  std::vector<at::Tensor> flat;
  for (const auto& t : whole) flat.push_back(t.reshape({-1}));
  if (kind != "units") {
    at::Tensor all = at::cat(flat);
    const int64_t size = ceil_div(all.numel(), group);
    return at::cat({all, at::zeros({size * group - all.numel()}, all.options())}).narrow(0, member * size, size);
  }
  std::vector<at::Tensor> parts;
  for (const auto& members : kUnits) {
    std::vector<at::Tensor> unit;
    for (size_t p : members) unit.push_back(flat[p]);
    at::Tensor buffer = at::cat(unit);
    const int64_t chunk = ceil_div(buffer.numel(), group);
    buffer = at::cat({buffer, at::zeros({chunk * group - buffer.numel()}, buffer.options())});
    parts.push_back(buffer.narrow(0, member * chunk, chunk));
  }
  return at::cat(parts);
}

ShardLayout layout(const std::string& kind, int group) {
  if (kind == "whole") return ShardLayout::whole(kParams);
  if (kind == "flat") return ShardLayout::flat(kParams, group);
  return ShardLayout::units(units_json(group), group, "test");
}

Dict group_dict(std::vector<int64_t> params) {
  Dict group(c10::StringType::get(), c10::AnyType::get());
  group.insert("lr", 0.001);
  group.insert("params", c10::List<int64_t>(params));
  return group;
}

// What member `member` of a layout saves for the whole Adam state (exp_avg, exp_avg_sq), step 7.
c10::IValue saved_dict(const std::vector<at::Tensor>& avg, const std::vector<at::Tensor>& sq, const std::string& kind,
                       int group, int member) {
  Dict state(c10::IntType::get(), c10::AnyType::get());
  auto entry = [](const at::Tensor& a, const at::Tensor& s) {
    Dict param(c10::StringType::get(), c10::AnyType::get());
    param.insert("step", at::scalar_tensor(7.0, at::kFloat));
    param.insert("exp_avg", a.clone());
    param.insert("exp_avg_sq", s.clone());
    return param;
  };
  std::vector<int64_t> indices;
  if (kind == "whole") {
    for (size_t i = 0; i < avg.size(); ++i) {
      state.insert(static_cast<int64_t>(i), entry(avg[i], sq[i]));
      indices.push_back(static_cast<int64_t>(i));
    }
  } else {
    state.insert(int64_t{0}, entry(reference(avg, kind, group, member), reference(sq, kind, group, member)));
    indices.push_back(0);
  }
  c10::impl::GenericList groups(c10::AnyType::get());
  groups.push_back(group_dict(indices));
  Dict dict(c10::StringType::get(), c10::AnyType::get());
  dict.insert("state", state);
  dict.insert("param_groups", groups);
  return dict;
}

TEST(ShardLayout, EveryPairOfLayoutsCutsBitwise) {
  std::vector<at::Tensor> avg, sq;
  for (const auto& p : kParams) {
    avg.push_back(at::randn(p.shape, at::kFloat));
    sq.push_back(at::rand(p.shape, at::kDouble));
  }
  const std::vector<std::pair<std::string, int>> layouts{{"whole", 1}, {"flat", 1},  {"flat", 2},
                                                         {"flat", 3},  {"flat", 4},  {"units", 1},
                                                         {"units", 2}, {"units", 3}, {"units", 4}};
  for (const auto& from : layouts) {  // not structured bindings: the lambda below uses them
    const std::string& from_kind = from.first;
    const int from_group = from.second;
    const ShardLayout source = layout(from_kind, from_group);
    for (const auto& [to_kind, to_group] : layouts) {
      const ShardLayout target = layout(to_kind, to_group);
      for (int member = 0; member < to_group; ++member) {
        const std::string where = from_kind + "/" + std::to_string(from_group) + " -> " + to_kind + "/" +
                                  std::to_string(to_group) + " member " + std::to_string(member);
        std::set<int> asked;
        const c10::IValue out = reshard_optimizer_state(
            source,
            [&](int m) {
              EXPECT_TRUE(asked.insert(m).second) << where << ": member " << m << " read twice";
              return saved_dict(avg, sq, from_kind, from_group, m);
            },
            target, member, "test");
        const Dict state = out.toGenericDict().at("state").toGenericDict();
        const auto params = out.toGenericDict().at("param_groups").toList().get(0).toGenericDict().at("params");
        if (to_kind == "whole") {
          ASSERT_EQ(state.size(), kParams.size()) << where;
          EXPECT_EQ(params.toIntVector().size(), kParams.size()) << where;
          for (size_t i = 0; i < kParams.size(); ++i) {
            const Dict entry = state.at(static_cast<int64_t>(i)).toGenericDict();
            EXPECT_TRUE(at::equal(entry.at("exp_avg").toTensor(), avg[i])) << where << " parameter " << i;
            EXPECT_TRUE(at::equal(entry.at("exp_avg_sq").toTensor(), sq[i])) << where << " parameter " << i;
            EXPECT_EQ(entry.at("step").toTensor().item<float>(), 7.0f) << where;
          }
        } else {
          ASSERT_EQ(state.size(), 1u) << where;
          EXPECT_EQ(params.toIntVector(), std::vector<int64_t>{0}) << where;
          const Dict entry = state.at(int64_t{0}).toGenericDict();
          EXPECT_TRUE(at::equal(entry.at("exp_avg").toTensor(), reference(avg, to_kind, to_group, member))) << where;
          EXPECT_TRUE(at::equal(entry.at("exp_avg_sq").toTensor(), reference(sq, to_kind, to_group, member))) << where;
          EXPECT_EQ(entry.at("exp_avg_sq").toTensor().scalar_type(), at::kDouble) << where;
        }
        EXPECT_EQ(out.toGenericDict().at("param_groups").toList().get(0).toGenericDict().at("lr").toDouble(), 0.001);
        // Only the members holding part of the new range are read (member 0 always: the group).
        std::set<int> needed{0};
        for (int m : members_needed(source, target, member)) needed.insert(m);
        EXPECT_EQ(asked, needed) << where;
      }
    }
  }
}

TEST(ShardLayout, LayoutsSurviveTheManifest) {
  for (const auto& [kind, group] : std::vector<std::pair<std::string, int>>{{"whole", 1}, {"flat", 3}, {"units", 4}}) {
    const ShardLayout original = layout(kind, group);
    const ShardLayout read = ShardLayout::from_json(nlohmann::json::parse(original.to_json().dump()), "manifest");
    EXPECT_EQ(read.to_json(), original.to_json());
    EXPECT_EQ(read.member_numel(), original.member_numel());
    for (int m = 0; m < group; ++m) EXPECT_EQ(read.pieces(m).size(), original.pieces(m).size());
  }
}

template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::IO) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

TEST(ShardLayout, BadLayoutsAndStatesAreRefusedNamingTheValue) {
  std::vector<at::Tensor> avg, sq;
  for (const auto& p : kParams) {
    avg.push_back(at::randn(p.shape));
    sq.push_back(at::rand(p.shape));
  }
  // Chunks saved by 2 processes, claimed to be from 3.
  const std::string wrong_size = error_of([&] {
    reshard_optimizer_state(
        layout("flat", 3), [&](int m) { return saved_dict(avg, sq, "flat", 2, std::min(m, 1)); }, layout("whole", 1), 0,
        "ckpt/optimizer_rank0.bin");
  });
  EXPECT_NE(
      wrong_size.find("ckpt/optimizer_rank0.bin (\"exp_avg\"): process 0's vector has 42 elements, its layout 28"),
      std::string::npos)
      << wrong_size;
  // A step that differs between the processes.
  const std::string steps = error_of([&] {
    reshard_optimizer_state(
        layout("flat", 2),
        [&](int m) {
          c10::IValue d = saved_dict(avg, sq, "flat", 2, m);
          if (m == 1) {
            d.toGenericDict().at("state").toGenericDict().at(0).toGenericDict().insert_or_assign(
                "step", at::scalar_tensor(8.0, at::kFloat));
          }
          return d;
        },
        layout("whole", 1), 0, "x");
  });
  EXPECT_NE(steps.find("\"step\" differs between process 0 and process 1"), std::string::npos) << steps;
  // The model has another shape for a parameter than the checkpoint.
  std::vector<LayoutParam> other = kParams;
  other[2].shape = {4, 6};
  const std::string shape = error_of([&] { check_same_parameters(layout("flat", 2), ShardLayout::whole(other), "d"); });
  EXPECT_NE(shape.find("d: parameter 2.weight has shape [3, 8], the model's has [4, 6]"), std::string::npos) << shape;
  other = kParams;
  other[4].name = "gain";
  const std::string name = error_of([&] { check_same_parameters(layout("whole", 1), ShardLayout::whole(other), "d"); });
  EXPECT_NE(name.find("d holds no parameter gain"), std::string::npos) << name;
  // Units that lie: a parameter past its unit, overlapping parameters, a gap, a hostile group.
  nlohmann::json past = units_json(2);
  past[0]["params"][1]["offset"] = 50;
  EXPECT_NE(
      error_of([&] { ShardLayout::units(past, 2, "f"); }).find("parameter 0.bias (elements 50 to 58) lies outside"),
      std::string::npos);
  nlohmann::json overlap = units_json(2);
  overlap[0]["params"][1]["offset"] = 40;
  EXPECT_NE(error_of([&] { ShardLayout::units(overlap, 2, "f"); }).find("two parameters share elements"),
            std::string::npos);
  nlohmann::json gap = units_json(2);
  gap[1]["shard_offset"] = 99;
  EXPECT_NE(error_of([&] { ShardLayout::units(gap, 2, "f"); }).find("a wrap unit starts at 99"), std::string::npos);
  EXPECT_NE(error_of([&] {
              ShardLayout::from_json({{"kind", "flat"}, {"group", 0}, {"params", {}}}, "m");
            }).find("m: a layout's group is 0 processes"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              ShardLayout::from_json({{"kind", "rows"}, {"group", 1}}, "m");
            }).find("layout kind \"rows\" is none of"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              ShardLayout::from_json(
                  nlohmann::json::parse(R"({"kind": "whole", "group": 1, "params": [["w", [4, -1]]]})"), "m");
            }).find("parameter w has a dimension that is not a non-negative integer"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              ShardLayout::from_json(
                  nlohmann::json::parse(R"({"kind": "whole", "group": 1, "params": [["w", [4]], ["w", [2]]]})"), "m");
            }).find("names parameter w twice"),
            std::string::npos);
}

}  // namespace
}  // namespace accel::detail
