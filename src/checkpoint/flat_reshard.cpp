#include "checkpoint/flat_reshard.hpp"

#include <ATen/ATen.h>

#include <algorithm>
#include <map>

#include "accel/error.hpp"

namespace accel::detail {

namespace {

using Dict = c10::impl::GenericDict;

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

Dict as_dict(const c10::IValue& value, const std::string& where) {
  require(value.isGenericDict(), ErrorCode::IO, where + " is a " + value.tagKind() + ", not a dict");
  return value.toGenericDict();
}

const c10::IValue& field(const Dict& dict, const std::string& key, const std::string& where) {
  auto it = dict.find(key);
  require(it != dict.end(), ErrorCode::IO, where + " lacks \"" + key + "\"");
  return it->value();
}

// Same value in every chunk: numbers, and tensors that are not per-element (step).
bool same(const c10::IValue& a, const c10::IValue& b) {
  if (a.isTensor() && b.isTensor()) {
    return a.toTensor().sizes() == b.toTensor().sizes() && at::equal(a.toTensor(), b.toTensor());
  }
  if (a.isInt() && b.isInt()) return a.toInt() == b.toInt();
  if (a.isDouble() && b.isDouble()) return a.toDouble() == b.toDouble();
  if (a.isNone() && b.isNone()) return true;
  return a.tagKind() == b.tagKind();  // lists and groups: taken from the first
}

}  // namespace

c10::IValue reshard_flat_optimizer_state(const std::function<c10::IValue(int saved_rank)>& saved_chunk, int saved_world,
                                         int world, int rank, int64_t total, const std::string& label) {
  require(saved_world >= 1 && world >= 1 && rank >= 0 && rank < world && total >= 0, ErrorCode::InvalidArgument,
          label + ": cannot reshard from " + std::to_string(saved_world) + " to " + std::to_string(world) +
              " processes (rank " + std::to_string(rank) + ")");
  const int64_t saved_size = ceil_div(total, saved_world), size = ceil_div(total, world);
  const int64_t begin = std::min<int64_t>(rank * size, total), end = std::min<int64_t>((rank + 1) * size, total);
  // The saved processes whose chunks hold part of [begin, end); process 0 for
  // the groups and step when this process holds padding only.
  const int first = begin < end ? static_cast<int>(begin / saved_size) : 0;
  const int last = begin < end ? static_cast<int>((end - 1) / saved_size) : 0;
  std::map<int, Dict> chunks;
  for (int r = first; r <= last; ++r)
    chunks.emplace(r, as_dict(saved_chunk(r), label + " (process " + std::to_string(r) + ")"));

  const Dict& model = chunks.at(first);
  const std::string where = label + " (process " + std::to_string(first) + ")";
  Dict out(c10::StringType::get(), c10::AnyType::get());
  out.insert("param_groups", field(model, "param_groups", where));
  const Dict model_state = as_dict(field(model, "state", where), where + "[\"state\"]");
  Dict state(model_state.keyType(), model_state.valueType());
  for (const auto& [r, chunk] : chunks) {
    const Dict other = as_dict(field(chunk, "state", label), label + "[\"state\"]");
    require(other.size() == model_state.size(), ErrorCode::IO,
            label + ": process " + std::to_string(r) + " holds state for " + std::to_string(other.size()) +
                " parameter(s), process " + std::to_string(first) + " for " + std::to_string(model_state.size()));
  }
  for (const auto& entry : model_state) {
    const c10::IValue& index = entry.key();
    const std::string param =
        where + "[\"state\"][" + (index.isInt() ? std::to_string(index.toInt()) : index.tagKind()) + "]";
    const Dict values = as_dict(entry.value(), param);
    Dict resharded(values.keyType(), values.valueType());
    for (const auto& item : values) {
      const std::string key = item.key().toStringRef();
      const c10::IValue& value = item.value();
      // exp_avg, exp_avg_sq, momentum_buffer: 1-D, one element per flat element ("step" is 0-d).
      const bool per_element = value.isTensor() && value.toTensor().dim() == 1;
      if (!per_element) {
        for (const auto& [r, chunk] : chunks) {
          const Dict other = as_dict(field(chunk, "state", label), label).at(entry.key()).toGenericDict();
          auto found = other.find(key);
          require(found != other.end() && same(found->value(), value), ErrorCode::IO,
                  label + ": \"" + key + "\" differs between processes " + std::to_string(first) + " and " +
                      std::to_string(r) + "; they must agree for the state to be cut again");
        }
        resharded.insert(key, value);
        continue;
      }
      at::Tensor cut = at::zeros({size}, value.toTensor().options());
      for (const auto& [r, chunk] : chunks) {
        const Dict other = as_dict(field(chunk, "state", label), label).at(entry.key()).toGenericDict();
        auto found = other.find(key);
        require(found != other.end() && found->value().isTensor(), ErrorCode::IO,
                label + ": process " + std::to_string(r) + " lacks the tensor \"" + key + "\"");
        const at::Tensor& saved = found->value().toTensor();
        require(saved.dim() == 1 && saved.numel() == saved_size, ErrorCode::IO,
                label + ": process " + std::to_string(r) + "'s \"" + key + "\" has " + std::to_string(saved.numel()) +
                    " elements; " + std::to_string(saved_world) + " processes sharing " + std::to_string(total) +
                    " hold " + std::to_string(saved_size) + " each");
        // The part of [begin, end) in process r's chunk [r*saved_size, (r+1)*saved_size).
        const int64_t from = std::max(begin, r * saved_size), to = std::min(end, (r + 1) * saved_size);
        if (from < to) cut.narrow(0, from - begin, to - from).copy_(saved.narrow(0, from - r * saved_size, to - from));
      }
      resharded.insert(key, cut);
    }
    state.insert(entry.key(), resharded);
  }
  out.insert("state", state);
  return out;
}

c10::IValue unflatten_optimizer_state(const std::function<c10::IValue(int saved_rank)>& saved_chunk, int saved_world,
                                      const std::vector<std::vector<int64_t>>& shapes, const std::string& label) {
  int64_t total = 0;
  for (const auto& shape : shapes) total += c10::multiply_integers(shape);
  // The whole state: process 0 of a world of one takes every element.
  const c10::IValue whole = reshard_flat_optimizer_state(saved_chunk, saved_world, 1, 0, total, label);
  const Dict dict = whole.toGenericDict();
  c10::impl::GenericList groups = dict.at("param_groups").toList();
  require(groups.size() == 1, ErrorCode::IO,
          label + ": the sharded optimizer state has " + std::to_string(groups.size()) +
              " parameter groups; one flat parameter has one");
  Dict group = groups.get(0).toGenericDict().copy();
  std::vector<int64_t> indices(shapes.size());
  for (size_t i = 0; i < indices.size(); ++i) indices[i] = static_cast<int64_t>(i);
  group.insert_or_assign("params", c10::List<int64_t>(indices));
  c10::impl::GenericList out_groups(groups.elementType());
  out_groups.push_back(group);

  const Dict flat_state = dict.at("state").toGenericDict();
  Dict state(c10::IntType::get(), c10::AnyType::get());
  if (flat_state.size() == 1) {  // empty before the first step
    const Dict flat = flat_state.begin()->value().toGenericDict();
    int64_t offset = 0;
    for (size_t i = 0; i < shapes.size(); ++i) {
      const int64_t numel = c10::multiply_integers(shapes[i]);
      Dict param(flat.keyType(), flat.valueType());
      for (const auto& item : flat) {
        const c10::IValue& value = item.value();
        if (value.isTensor() && value.toTensor().dim() == 1) {
          param.insert(item.key(), value.toTensor().narrow(0, offset, numel).reshape(shapes[i]).clone());
        } else {
          param.insert(item.key(), value);  // step: the same for every parameter
        }
      }
      state.insert(static_cast<int64_t>(i), param);
      offset += numel;
    }
  }
  Dict out(c10::StringType::get(), c10::AnyType::get());
  out.insert("state", state);
  out.insert("param_groups", out_groups);
  return out;
}

}  // namespace accel::detail
