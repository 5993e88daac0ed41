#include "checkpoint/shard_layout.hpp"

#include <ATen/ATen.h>

#include <algorithm>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

#include "accel/error.hpp"

namespace accel::detail {

namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

const char* kind_name(ShardLayout::Kind kind) {
  switch (kind) {
    case ShardLayout::Kind::Whole: return "whole";
    case ShardLayout::Kind::Flat: return "flat";
    case ShardLayout::Kind::Units: return "units";
  }
  return "?";
}

// A shape from JSON: non-negative dimensions whose product stays far from overflow.
LayoutParam param_from(const std::string& name, const nlohmann::json& shape, const std::string& where) {
  require(shape.is_array(), ErrorCode::IO, where + ": parameter " + name + " has no shape list");
  LayoutParam param{name, {}, 1};
  for (const auto& d : shape) {
    require(d.is_number_integer() && d.get<int64_t>() >= 0, ErrorCode::IO,
            where + ": parameter " + name + " has a dimension that is not a non-negative integer");
    param.shape.push_back(d.get<int64_t>());
    require(param.shape.back() == 0 || param.numel <= (int64_t{1} << 50) / std::max<int64_t>(param.shape.back(), 1),
            ErrorCode::IO, where + ": parameter " + name + " has an impossible number of elements");
    param.numel *= param.shape.back();
  }
  return param;
}

}  // namespace

ShardLayout ShardLayout::whole(std::vector<LayoutParam> params) {
  ShardLayout layout = flat(std::move(params), 1);
  layout.kind_ = Kind::Whole;
  return layout;
}

ShardLayout ShardLayout::flat(std::vector<LayoutParam> params, int group) {
  require(group >= 1, ErrorCode::InvalidArgument, "a shard group of " + std::to_string(group) + " processes");
  ShardLayout layout;
  layout.kind_ = Kind::Flat;
  layout.group_ = group;
  layout.params_ = std::move(params);
  int64_t total = 0;
  for (const auto& p : layout.params_) total += p.numel;
  const int64_t size = ceil_div(total, group);
  layout.member_numel_ = size;
  layout.pieces_.resize(static_cast<size_t>(group));
  int64_t offset = 0;
  for (size_t i = 0; i < layout.params_.size(); ++i) {
    const int64_t numel = layout.params_[i].numel;
    // The members whose ranges [m*size, (m+1)*size) meet [offset, offset + numel).
    for (int64_t e = offset; e < offset + numel;) {
      const int64_t member = e / size, end = std::min(offset + numel, (member + 1) * size);
      layout.pieces_[static_cast<size_t>(member)].push_back({i, e - offset, end - e, e - member * size});
      e = end;
    }
    offset += numel;
  }
  layout.index();
  return layout;
}

ShardLayout ShardLayout::units(const nlohmann::json& units_json, int group, const std::string& where) {
  require(group >= 1, ErrorCode::IO, where + ": a shard group of " + std::to_string(group) + " processes");
  require(units_json.is_array(), ErrorCode::IO, where + ": the wrap units are not a JSON array");
  ShardLayout layout;
  layout.kind_ = Kind::Units;
  layout.group_ = group;
  layout.units_ = units_json.dump();
  layout.pieces_.resize(static_cast<size_t>(group));
  int64_t expected_offset = 0;  // units lie end to end in a member's vector
  for (const auto& unit : units_json) {
    require(unit.is_object() && unit.contains("chunk") && unit.contains("shard_offset") && unit.contains("params"),
            ErrorCode::IO, where + ": a wrap unit lacks \"chunk\", \"shard_offset\" or \"params\"");
    const nlohmann::json &chunk_json = unit["chunk"], &offset_json = unit["shard_offset"];
    require(chunk_json.is_number_integer() && offset_json.is_number_integer() && chunk_json.get<int64_t>() >= 0 &&
                chunk_json.get<int64_t>() <= (int64_t{1} << 50) / group,
            ErrorCode::IO, where + ": a wrap unit's \"chunk\" or \"shard_offset\" is not a sensible count");
    const int64_t chunk = chunk_json.get<int64_t>(), shard_offset = offset_json.get<int64_t>();
    require(shard_offset == expected_offset, ErrorCode::IO,
            where + ": a wrap unit starts at " + std::to_string(shard_offset) +
                " of the shard, the units before end at " + std::to_string(expected_offset));
    expected_offset += chunk;
    require(unit["params"].is_array(), ErrorCode::IO, where + ": a wrap unit's \"params\" is not a list");
    for (const auto& p : unit["params"]) {
      require(p.is_object() && p.contains("name") && p["name"].is_string() && p.contains("shape") &&
                  p.contains("offset") && p["offset"].is_number_integer(),
              ErrorCode::IO, where + ": a parameter of a wrap unit lacks \"name\", \"shape\" or \"offset\"");
      const std::string name = p["name"].get<std::string>();
      LayoutParam param = param_from(name, p["shape"], where);
      const int64_t offset = p["offset"].get<int64_t>();
      require(offset >= 0 && offset + param.numel <= chunk * group, ErrorCode::IO,
              where + ": parameter " + name + " (elements " + std::to_string(offset) + " to " +
                  std::to_string(offset + param.numel) + ") lies outside its unit of " + std::to_string(group) + " x " +
                  std::to_string(chunk) + " elements");
      const size_t index = layout.params_.size();
      layout.params_.push_back(std::move(param));
      for (int64_t e = offset; e < offset + layout.params_.back().numel;) {
        const int64_t member = e / chunk, end = std::min(offset + layout.params_.back().numel, (member + 1) * chunk);
        layout.pieces_[static_cast<size_t>(member)].push_back(
            {index, e - offset, end - e, shard_offset + e - member * chunk});
        e = end;
      }
    }
  }
  layout.member_numel_ = expected_offset;
  layout.index();
  // Two parameters on the same elements would each be read from the other's values.
  for (const auto& pieces : layout.pieces_) {
    std::vector<std::pair<int64_t, int64_t>> spans;
    for (const auto& piece : pieces) spans.emplace_back(piece.at, piece.at + piece.length);
    std::sort(spans.begin(), spans.end());
    for (size_t i = 1; i < spans.size(); ++i) {
      require(spans[i].first >= spans[i - 1].second, ErrorCode::IO,
              where + ": two parameters share elements of a wrap unit");
    }
  }
  return layout;
}

void ShardLayout::index() {
  holders_.assign(params_.size(), {});
  by_name_.clear();
  for (size_t i = 0; i < params_.size(); ++i) {
    require(by_name_.emplace(params_[i].name, i).second, ErrorCode::IO,
            "a shard layout names parameter " + params_[i].name + " twice");
  }
  for (int m = 0; m < group_; ++m) {
    for (const LayoutPiece& piece : pieces_[static_cast<size_t>(m)]) holders_[piece.param].emplace_back(m, piece);
  }
}

int64_t ShardLayout::find(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? -1 : static_cast<int64_t>(it->second);
}

nlohmann::json ShardLayout::to_json() const {
  nlohmann::json out = {{"kind", kind_name(kind_)}, {"group", group_}};
  if (kind_ == Kind::Units) {
    out["units"] = nlohmann::json::parse(units_);
    return out;
  }
  nlohmann::json params = nlohmann::json::array();
  for (const auto& p : params_) params.push_back({p.name, p.shape});
  out["params"] = std::move(params);
  return out;
}

ShardLayout ShardLayout::from_json(const nlohmann::json& json, const std::string& where) {
  require(json.is_object() && json.contains("kind") && json["kind"].is_string() && json.contains("group") &&
              json["group"].is_number_integer(),
          ErrorCode::IO, where + ": a layout lacks \"kind\" or \"group\"");
  const std::string kind = json["kind"].get<std::string>();
  const int64_t group = json["group"].get<int64_t>();
  require(group >= 1 && group <= (1 << 20), ErrorCode::IO,
          where + ": a layout's group is " + std::to_string(group) + " processes");
  if (kind == "units") {
    require(json.contains("units"), ErrorCode::IO, where + ": a units layout lacks \"units\"");
    return units(json["units"], static_cast<int>(group), where);
  }
  require(kind == "whole" || kind == "flat", ErrorCode::IO,
          where + ": layout kind \"" + kind + "\" is none of whole, flat, units");
  require(json.contains("params") && json["params"].is_array(), ErrorCode::IO,
          where + ": a " + kind + " layout lacks its \"params\" list");
  std::vector<LayoutParam> params;
  for (const auto& p : json["params"]) {
    require(p.is_array() && p.size() == 2 && p[0].is_string(), ErrorCode::IO,
            where + ": a layout parameter is not [name, shape]");
    params.push_back(param_from(p[0].get<std::string>(), p[1], where));
  }
  try {
    return kind == "whole" ? whole(std::move(params)) : flat(std::move(params), static_cast<int>(group));
  } catch (const Error& e) {
    fail(ErrorCode::IO, where + ": " + e.what());
  }
}

std::vector<int> members_needed(const ShardLayout& source, const ShardLayout& target, int member) {
  std::set<int> members;
  for (const LayoutPiece& piece : target.pieces(member)) {
    const int64_t param = source.find(target.params()[piece.param].name);
    if (param < 0) continue;  // assemble_member names it
    for (const auto& [holder, held] : source.holders(static_cast<size_t>(param))) {
      if (held.begin < piece.begin + piece.length && piece.begin < held.begin + held.length) members.insert(holder);
    }
  }
  return {members.begin(), members.end()};
}

void check_same_parameters(const ShardLayout& source, const ShardLayout& target, const std::string& label) {
  for (const LayoutParam& wanted : target.params()) {
    const int64_t found = source.find(wanted.name);
    require(found >= 0, ErrorCode::IO, label + " holds no parameter " + wanted.name);
    const LayoutParam& have = source.params()[static_cast<size_t>(found)];
    require(have.shape == wanted.shape, ErrorCode::IO,
            label + ": parameter " + wanted.name + " has shape " + c10::str(at::IntArrayRef(have.shape)) +
                ", the model's has " + c10::str(at::IntArrayRef(wanted.shape)));
  }
  for (const LayoutParam& extra : source.params()) {
    require(target.find(extra.name) >= 0, ErrorCode::IO,
            label + " holds parameter " + extra.name + ", which the model prepared now has not (or not trainable)");
  }
}

at::Tensor assemble_member_by_param(const ShardLayout& target, int member,
                                    const std::function<at::Tensor(size_t param)>& param_value,
                                    const at::TensorOptions& options, const std::string& label) {
  at::Tensor out;
  for (const LayoutPiece& piece : target.pieces(member)) {
    const LayoutParam& p = target.params()[piece.param];
    const at::Tensor value = param_value(piece.param);
    require(value.defined() && value.numel() == p.numel, ErrorCode::IO,
            label + ": parameter " + p.name + " has " + (value.defined() ? std::to_string(value.numel()) : "no") +
                " elements, the model's " + std::to_string(p.numel));
    if (!out.defined()) out = at::zeros({target.member_numel()}, value.options());
    out.narrow(0, piece.at, piece.length).copy_(value.reshape({-1}).narrow(0, piece.begin, piece.length));
  }
  return out.defined() ? out : at::zeros({target.member_numel()}, options);
}

at::Tensor assemble_member(const ShardLayout& source, const std::function<at::Tensor(int member)>& source_vector,
                           const ShardLayout& target, int member, const std::string& label) {
  check_same_parameters(source, target, label);
  std::map<int, at::Tensor> vectors;
  for (int m : members_needed(source, target, member)) {
    at::Tensor v = source_vector(m);
    require(v.defined() && v.dim() == 1 && v.numel() == source.member_numel(), ErrorCode::IO,
            label + ": process " + std::to_string(m) + "'s vector has " +
                (v.defined() ? std::to_string(v.numel()) : std::string("no")) + " elements, its layout " +
                std::to_string(source.member_numel()));
    vectors.emplace(m, std::move(v));
  }
  require(!vectors.empty() || target.pieces(member).empty(), ErrorCode::IO, label + ": nothing to read");
  const at::TensorOptions options = vectors.empty() ? at::TensorOptions(at::kFloat) : vectors.begin()->second.options();
  at::Tensor out = at::zeros({target.member_numel()}, options);
  for (const LayoutPiece& piece : target.pieces(member)) {
    const auto param = static_cast<size_t>(source.find(target.params()[piece.param].name));
    for (const auto& [holder, held] : source.holders(param)) {
      const int64_t from = std::max(piece.begin, held.begin);
      const int64_t to = std::min(piece.begin + piece.length, held.begin + held.length);
      if (from >= to) continue;
      out.narrow(0, piece.at + (from - piece.begin), to - from)
          .copy_(vectors.at(holder).narrow(0, held.at + (from - held.begin), to - from));
    }
  }
  return out;
}

}  // namespace accel::detail
