#include "checkpoint/optimizer_reshard.hpp"

#include <ATen/ATen.h>

#include <map>
#include <vector>

#include "accel/error.hpp"
#include "formats/torch_pickle.hpp"

namespace accel::detail {

namespace {

using Dict = c10::impl::GenericDict;

Dict as_dict(const c10::IValue& value, const std::string& where) {
  require(value.isGenericDict(), ErrorCode::IO, where + " is a " + value.tagKind() + ", not a dict");
  return value.toGenericDict();
}

const c10::IValue& field(const Dict& dict, const std::string& key, const std::string& where) {
  auto it = dict.find(key);
  require(it != dict.end(), ErrorCode::IO, where + " lacks \"" + key + "\"");
  return it->value();
}

bool per_element(const std::string& key, const c10::IValue& value) { return key != "step" && value.isTensor(); }

std::string index_text(const c10::IValue& key) { return key.isInt() ? std::to_string(key.toInt()) : key.tagKind(); }

class SavedDicts {
 public:
  SavedDicts(const ShardLayout& layout, const std::function<c10::IValue(int)>& read, std::string label)
      : layout_(layout), read_(read), label_(std::move(label)) {}

  std::string where(int member) const { return label_ + " (process " + std::to_string(member) + ")"; }

  // Member m's "state": {index: {key: value}}, checked for its layout's shape.
  const Dict& state(int member) {
    auto it = states_.find(member);
    if (it != states_.end()) return it->second;
    const Dict top = as_dict(read_(member), where(member));
    Dict state = as_dict(field(top, "state", where(member)), where(member) + "[\"state\"]");
    const size_t entries = layout_.kind() == ShardLayout::Kind::Whole ? layout_.params().size() : 1;
    require(state.empty() || state.size() == entries, ErrorCode::IO,
            where(member) + " holds state for " + std::to_string(state.size()) + " parameter(s), its layout has " +
                std::to_string(entries));
    for (const auto& entry : state) {
      require(entry.key().isInt() && entry.key().toInt() >= 0 && static_cast<size_t>(entry.key().toInt()) < entries,
              ErrorCode::IO,
              where(member) + "[\"state\"] has the key " + index_text(entry.key()) + ", not 0 to " +
                  std::to_string(entries - 1));
      as_dict(entry.value(), where(member) + "[\"state\"][" + index_text(entry.key()) + "]");
    }
    tops_.emplace(member, top);
    return states_.emplace(member, state).first->second;
  }
  const Dict& top(int member) {
    state(member);
    return tops_.at(member);
  }

  // Entry `index` of member m's state: its tensor `key`.
  at::Tensor entry(int member, int64_t index, const std::string& key) {
    const Dict& s = state(member);
    const std::string at = where(member) + "[\"state\"]";
    auto entry = s.find(index);
    require(entry != s.end(), ErrorCode::IO, at + " has no entry " + std::to_string(index));
    const Dict values = entry->value().toGenericDict();
    auto found = values.find(key);
    require(found != values.end() && found->value().isTensor(), ErrorCode::IO,
            at + "[" + std::to_string(index) + "] lacks the tensor \"" + key + "\"");
    return found->value().toTensor();
  }

  // Member m's vector of the per-element quantity `key`.
  at::Tensor vector(int member, const std::string& key) {
    const std::string at = where(member) + "[\"state\"]";
    auto value_of = [&](int64_t index) { return entry(member, index, key); };
    if (layout_.kind() != ShardLayout::Kind::Whole) return value_of(0);
    std::vector<at::Tensor> parts;
    for (size_t i = 0; i < layout_.params().size(); ++i) {
      at::Tensor t = value_of(static_cast<int64_t>(i));
      require(t.numel() == layout_.params()[i].numel, ErrorCode::IO,
              at + "[" + std::to_string(i) + "][\"" + key + "\"] has " + std::to_string(t.numel()) +
                  " elements, parameter " + layout_.params()[i].name + " " + std::to_string(layout_.params()[i].numel));
      parts.push_back(t.reshape({-1}));
    }
    require(!parts.empty(), ErrorCode::IO, at + " has no parameters");
    for (const at::Tensor& part : parts) {
      require(part.scalar_type() == parts.front().scalar_type(), ErrorCode::IO,
              at + ": \"" + key + "\" has more than one dtype");
    }
    return at::cat(parts);
  }

  std::vector<int> members_read() const {
    std::vector<int> out;
    for (const auto& [m, s] : states_) out.push_back(m);
    return out;
  }

 private:
  const ShardLayout& layout_;
  const std::function<c10::IValue(int)>& read_;
  std::string label_;
  std::map<int, Dict> tops_, states_;
};

}  // namespace

bool same_state_value(const c10::IValue& a, const c10::IValue& b) {
  if (a.isTensor() && b.isTensor()) {
    return a.toTensor().sizes() == b.toTensor().sizes() && a.toTensor().scalar_type() == b.toTensor().scalar_type() &&
           at::equal(a.toTensor(), b.toTensor());
  }
  if (a.isInt() && b.isInt()) return a.toInt() == b.toInt();
  if (a.isDouble() && b.isDouble()) return a.toDouble() == b.toDouble();
  if (a.isBool() && b.isBool()) return a.toBool() == b.toBool();
  return a.isNone() && b.isNone();
}

c10::IValue reshard_optimizer_state(const ShardLayout& source, const std::function<c10::IValue(int member)>& saved_dict,
                                    const ShardLayout& target, int member, const std::string& label) {
  require(member >= 0 && member < target.group(), ErrorCode::InvalidArgument,
          label + ": process " + std::to_string(member) + " of a shard group of " + std::to_string(target.group()));
  check_same_parameters(source, target, label);
  SavedDicts saved(source, saved_dict, label);
  const std::string first = saved.where(0);

  // The one parameter group, its "params" renumbered for the target layout.
  const auto groups_value = field(saved.top(0), "param_groups", first);
  require(groups_value.isList() && groups_value.toList().size() == 1, ErrorCode::IO,
          first + ": \"param_groups\" is not a list of one group (libaccel's optimizers have one)");
  Dict group = as_dict(groups_value.toList().get(0), first + "[\"param_groups\"][0]").copy();
  const bool whole_target = target.kind() == ShardLayout::Kind::Whole;
  std::vector<int64_t> indices(whole_target ? target.params().size() : 1);
  for (size_t i = 0; i < indices.size(); ++i) indices[i] = static_cast<int64_t>(i);
  group.insert_or_assign("params", c10::List<int64_t>(indices));
  c10::impl::GenericList groups(groups_value.toList().elementType());
  groups.push_back(group);

  Dict state(c10::IntType::get(), c10::AnyType::get());
  const Dict& model_state = saved.state(0);
  if (!model_state.empty()) {  // empty before the first step
    const Dict model = model_state.begin()->value().toGenericDict();
    std::map<std::string, at::Tensor> cut;  // key -> the target member's vector
    for (const auto& item : model) {
      require(item.key().isString(), ErrorCode::IO, first + ": a state key is not a string");
      const std::string key = item.key().toStringRef();
      if (!per_element(key, item.value())) continue;
      // Saved tensors read from a mapped file: their pages are given back once
      // this process's elements are copied out.
      if (source.kind() == ShardLayout::Kind::Whole) {  // one parameter at a time, never the whole vector
        cut[key] = assemble_member_by_param(
            target, member,
            [&](size_t p) {
              const at::Tensor value = saved.entry(0, source.find(target.params()[p].name), key);
              at::Tensor out = value.reshape({-1}).clone();
              release_mapped_pages(value);
              return out;
            },
            item.value().toTensor().options(), label + " (\"" + key + "\")");
        continue;
      }
      std::vector<at::Tensor> read;
      cut[key] = assemble_member(
          source,
          [&](int m) {
            read.push_back(saved.vector(m, key));
            return read.back();
          },
          target, member, label + " (\"" + key + "\")");
      for (const at::Tensor& vector : read) release_mapped_pages(vector);
    }
    // Everything else agrees in every entry of every dict read.
    for (int m : saved.members_read()) {
      for (const auto& entry : saved.state(m)) {
        const Dict values = entry.value().toGenericDict();
        for (const auto& item : model) {
          const std::string key = item.key().toStringRef();
          if (per_element(key, item.value())) continue;
          auto found = values.find(key);
          require(found != values.end() && same_state_value(found->value(), item.value()), ErrorCode::IO,
                  label + ": \"" + key + "\" differs between process 0 and process " + std::to_string(m) + " (entry " +
                      index_text(entry.key()) + "); it must agree for the state to be cut again");
        }
      }
    }
    auto entry_for = [&](const std::function<at::Tensor(const at::Tensor&)>& slice) {
      Dict out(model.keyType(), model.valueType());
      for (const auto& item : model) {
        const std::string key = item.key().toStringRef();
        // A carried-over tensor (step) is copied: the saved dicts' tensors may
        // be read-only views of a mapped file (StorageReads::Map).
        c10::IValue carried = item.value().isTensor() ? c10::IValue(item.value().toTensor().clone()) : item.value();
        out.insert(key, per_element(key, item.value()) ? c10::IValue(slice(cut.at(key))) : carried);
      }
      return out;
    };
    if (whole_target) {
      int64_t offset = 0;
      for (size_t i = 0; i < target.params().size(); ++i) {
        const LayoutParam& p = target.params()[i];
        state.insert(static_cast<int64_t>(i), entry_for([&](const at::Tensor& v) {
                       return v.narrow(0, offset, p.numel).reshape(p.shape).clone();
                     }));
        offset += p.numel;
      }
    } else {
      state.insert(int64_t{0}, entry_for([](const at::Tensor& v) { return v; }));
    }
  }
  Dict out(c10::StringType::get(), c10::AnyType::get());
  out.insert("state", state);
  out.insert("param_groups", groups);
  return out;
}

}  // namespace accel::detail
