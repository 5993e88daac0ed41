// Where every element of a model's trainable parameters lives in the per-process
// vectors of a sharding strategy, so that state saved under one strategy and
// world size is cut again for another (load_state's resharding).
//
// A layout lists the parameters and, for each member of the shard group (the
// world; HYBRID_SHARD: a node's processes), the runs of parameter elements its
// vector holds:
//   whole  NO_SHARD (or one process): one member, each parameter whole, the
//          vector being the parameters flattened end to end.
//   flat   SHARD_OPTIMIZER / SHARD_GRAD_OP: the same vector padded to group * S,
//          S = ceil(T / group); member m holds [m*S, (m+1)*S) (sharding/flat_shard.hpp).
//   units  FULL_SHARD / HYBRID_SHARD: each wrap unit's parameters are one flat
//          buffer of group * chunk_u elements; member m holds [m*chunk_u,
//          (m+1)*chunk_u) of every unit, units end to end (sharding/full_shard.hpp).
// Every optimizer libaccel has is elementwise, so a per-element state tensor
// (exp_avg, momentum_buffer, ...) follows the same layout as the parameters.
// Parameters are matched between layouts by name.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

namespace accel::detail {

struct LayoutParam {
  std::string name;
  std::vector<int64_t> shape;
  int64_t numel = 1;
};

// Elements [begin, begin + length) of parameter `param` (an index into
// params()) sit at [at, at + length) of a member's vector.
struct LayoutPiece {
  size_t param = 0;
  int64_t begin = 0, length = 0, at = 0;
};

class ShardLayout {
 public:
  enum class Kind { Whole, Flat, Units };

  static ShardLayout whole(std::vector<LayoutParam> params);
  // group >= 1.
  static ShardLayout flat(std::vector<LayoutParam> params, int group);
  // `units_json`: FullShard::layout_json() of a shard group of `group`
  // processes. Throws IO naming `where` when it is malformed: negative sizes, a
  // parameter past its unit's group * chunk elements, a name twice, units that overlap.
  static ShardLayout units(const nlohmann::json& units_json, int group, const std::string& where);

  // What the manifest records ({"kind", "group", "params": [[name, shape], ...]}
  // or {"kind": "units", "group", "units": [...]}) and reads back (throws IO naming `where`).
  nlohmann::json to_json() const;
  static ShardLayout from_json(const nlohmann::json& json, const std::string& where);

  Kind kind() const { return kind_; }
  int group() const { return group_; }
  const std::vector<LayoutParam>& params() const { return params_; }
  // Elements of one member's vector, padding included.
  int64_t member_numel() const { return member_numel_; }
  const std::vector<LayoutPiece>& pieces(int member) const { return pieces_.at(static_cast<size_t>(member)); }
  // The index of the parameter called `name`, or -1.
  int64_t find(const std::string& name) const;
  // The members whose vectors hold part of parameter `param`, with the pieces.
  const std::vector<std::pair<int, LayoutPiece>>& holders(size_t param) const { return holders_.at(param); }

 private:
  ShardLayout() = default;
  void index();

  Kind kind_ = Kind::Whole;
  int group_ = 1;
  std::vector<LayoutParam> params_;
  int64_t member_numel_ = 0;
  std::vector<std::vector<LayoutPiece>> pieces_;                   // per member
  std::vector<std::vector<std::pair<int, LayoutPiece>>> holders_;  // per parameter
  std::map<std::string, size_t> by_name_;
  std::string units_;  // units: FullShard::layout_json() as given, for to_json
};

// The source members whose vectors target member `member` needs (ascending).
std::vector<int> members_needed(const ShardLayout& source, const ShardLayout& target, int member);

// Member `member`'s vector of `target` for one per-element quantity (a
// parameter, exp_avg, ...), assembled from the source members' vectors:
// `source_vector(m)` returns member m's 1-D vector of source.member_numel()
// elements and is asked only for members_needed. Padding is zero. Throws IO
// naming `label` when a target parameter is missing from the source or has
// another shape there, or when a source vector has the wrong number of elements.
at::Tensor assemble_member(const ShardLayout& source, const std::function<at::Tensor(int member)>& source_vector,
                           const ShardLayout& target, int member, const std::string& label);

// The same from a source that holds parameters whole (a distributed
// checkpoint), read one at a time: `param_value(p)` returns target parameter
// p's whole value (p.numel elements, any shape) and is asked once for each
// parameter member `member` holds part of, so that no more than one whole
// parameter is in memory beside the result. The result has the first value's
// dtype (`options` when the member holds nothing); padding is zero. Throws IO
// naming `label` when a value has the wrong number of elements.
at::Tensor assemble_member_by_param(const ShardLayout& target, int member,
                                    const std::function<at::Tensor(size_t param)>& param_value,
                                    const at::TensorOptions& options, const std::string& label);

// Checks that every parameter of `target` is in `source` with the same shape
// (and the reverse), naming the first that is not; throws IO with `label`.
void check_same_parameters(const ShardLayout& source, const ShardLayout& target, const std::string& label);

}  // namespace accel::detail
