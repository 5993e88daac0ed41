#include "formats/torch_pickle.hpp"

#include <ATen/ATen.h>
#include <caffe2/serialize/in_memory_adapter.h>
#include <caffe2/serialize/inline_container.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <tuple>
#include <set>
#include <unordered_map>

#include "accel/error.hpp"
#include "formats/torch_archive.hpp"

namespace accel::detail {

namespace {

// A stack entry: a finished value, or one of the few things a state dict's
// pickle handles on the way to its values (an allowed global, a storage, a
// tuple that still holds either).
struct Item {
  // Inert: what an inert global (NumPy's, in random states) would build; never built.
  enum class Kind { Value, Global, Storage, RawTuple, Inert } kind = Kind::Value;
  c10::IValue value;  // Value; Storage: a 1-D tensor over the whole storage
  std::string name;   // Global: "module.name"
  // RawTuple; shared, as the pickle shares it (DUP, the memo): a copy must not copy the tree.
  std::shared_ptr<const std::vector<Item>> items;
  // How many values this item is as a tree. DUP and the memo share values, so a
  // few kilobytes of pickle can nest one tuple in itself 2^n times; whatever walks
  // the result then never ends (found by fuzz_torch_pickle: 3 kB took 8 GB).
  size_t weight = 1;
  // RawTuple: how deep its items nest (1 + the deepest). A value's depth is
  // kept per container by the machine (Machine::Container), since containers
  // are shared and grow after they are pushed.
  size_t depth = 0;
};

// A real state dict is about 15 values per tensor: this allows some 70,000 tensors.
constexpr size_t kMaxPickleValues = size_t{1} << 20;

// How many items the machine's stack and memo may hold. torch's pickler sets
// a dict's items in one batch (two stack items each), so 2^18 allows a state
// dict of 131,072 tensors; pickle.py memoizes every container and string, a
// dozen per tensor, within kMaxPickleValues. Each item is under 256 bytes with
// the value it holds, so the machine's own memory stays below
// (2^18 + 2^20) * 256 B = 320 MiB whatever the file declares, and below 256
// bytes per byte of data.pkl (each item costs at least one opcode byte).
constexpr size_t kMaxStackItems = size_t{1} << 18;
constexpr size_t kMaxMemoEntries = kMaxPickleValues;

// How deep containers may nest. A state dict nests 4 or 5 levels (optimizer
// state: dict, "state", index, key, tensor); 256 matches the JSON parser's
// limit (core/json.hpp). Unbounded, a 2 MB pickle nesting a list a million
// deep overflowed the stack when the value was destroyed (recursively, by
// c10's refcounting), so the bound also bounds that recursion.
constexpr size_t kMaxPickleDepth = 256;

// Torch's pickler writes typed lists (List[int], ...) as these calls on a list,
// which they return as it is: pure data, nothing to import.
bool list_builder(const std::string& name) {
  return name == "torch.jit._pickle.build_intlist" || name == "torch.jit._pickle.build_doublelist" ||
         name == "torch.jit._pickle.build_boollist" || name == "torch.jit._pickle.build_tensorlist";
}

const std::map<std::string, at::ScalarType>& storage_types() {
  static const std::map<std::string, at::ScalarType> types{
      {"torch.FloatStorage", at::kFloat},       {"torch.DoubleStorage", at::kDouble}, {"torch.HalfStorage", at::kHalf},
      {"torch.BFloat16Storage", at::kBFloat16}, {"torch.LongStorage", at::kLong},     {"torch.IntStorage", at::kInt},
      {"torch.ShortStorage", at::kShort},       {"torch.CharStorage", at::kChar},     {"torch.ByteStorage", at::kByte},
      {"torch.BoolStorage", at::kBool}};
  return types;
}

bool allowed_global(const std::string& name) {
  // restore_type_tag(value, "Dict[str, Tensor]"): LibTorch's pickler (torch::pickle_save,
  // libaccel's own pytorch_model.bin) tags typed dicts with it; it returns value.
  return name == "collections.OrderedDict" || name == "torch._utils._rebuild_tensor_v2" ||
         name == "torch._utils._rebuild_parameter" || name == "torch.jit._pickle.restore_type_tag" ||
         list_builder(name) || storage_types().count(name) == 1;
}

// NumPy's generator state in Accelerate's random_states_{rank}.pkl (an ndarray
// of uint32 words; its bytes through _codecs.encode under protocol 2). Named
// only, never imported or called.
bool numpy_global(const std::string& name) {
  return name == "numpy.core.multiarray._reconstruct" || name == "numpy.ndarray" || name == "numpy.dtype" ||
         name == "_codecs.encode";
}

// torch 1.13's OneCycleLR.state_dict() holds anneal_func, a bound method,
// which pickle writes as getattr(<the scheduler object>, name), the object
// with its optimizer. Named only, never imported or called.
bool scheduler_object_global(const std::string& name) {
  static const char* const names[] = {"builtins.getattr",
                                      "__builtin__.getattr",
                                      "torch.optim.lr_scheduler.OneCycleLR",
                                      "collections.defaultdict",
                                      "builtins.dict",
                                      "__builtin__.dict",
                                      "torch.optim.sgd.SGD",
                                      "torch.optim.adam.Adam",
                                      "torch.optim.adamw.AdamW",
                                      "torch.optim.rmsprop.RMSprop",
                                      "torch.optim.adagrad.Adagrad"};
  for (const char* n : names) {
    if (name == n) return true;
  }
  return false;
}

// PyTorch's distributed checkpoint (.metadata): its dataclasses, read as dicts
// tagged with "__class__"; torch.Size, a layout and the memory-format enum as
// the data they wrap; dtypes as their names. Nothing is imported or called.
const std::set<std::string>& dcp_classes() {
  static const std::set<std::string> names{"torch.distributed.checkpoint.metadata.Metadata",
                                           "torch.distributed.checkpoint.metadata.TensorStorageMetadata",
                                           "torch.distributed.checkpoint.metadata.ChunkStorageMetadata",
                                           "torch.distributed.checkpoint.metadata.BytesStorageMetadata",
                                           "torch.distributed.checkpoint.metadata.TensorProperties",
                                           "torch.distributed.checkpoint.metadata.StorageMeta",
                                           "torch.distributed.checkpoint.metadata.MetadataIndex",
                                           "torch.distributed.checkpoint.filesystem._StorageInfo"};
  return names;
}
bool dcp_wrapper(const std::string& name) {
  return name == "torch.Size" || name == "torch.serialization._get_layout" ||
         name == "torch.distributed.checkpoint.metadata._MEM_FORMAT_ENCODING" || name == "pathlib.PosixPath";
}
bool dcp_dtype(const std::string& name) {
  static const std::set<std::string> names{"torch.float64", "torch.float32", "torch.float16", "torch.bfloat16",
                                           "torch.int64",   "torch.int32",   "torch.int16",   "torch.int8",
                                           "torch.uint8",   "torch.bool"};
  return names.count(name) == 1;
}

// A TorchScript module's classes (__torch__.<module path>.<Class>): objects whose
// attributes (submodules, parameters, buffers, flags) are data; no code of the
// archive is read or run.
bool script_class(const std::string& name, PickleVocabulary vocabulary) {
  return vocabulary == PickleVocabulary::TorchScriptModule && name.rfind("__torch__.", 0) == 0 &&
         name.size() > std::string("__torch__.").size();
}

bool inert_global(const std::string& name, PickleVocabulary vocabulary) {
  return (vocabulary == PickleVocabulary::RandomStates && numpy_global(name)) ||
         (vocabulary == PickleVocabulary::Scheduler && scheduler_object_global(name));
}

// The bytes of a storage record, given its name, the bytes its storage needs
// and their alignment: returns them and how many there are.
using RecordLoader =
    std::function<std::tuple<at::DataPtr, size_t>(const std::string& record, size_t bytes, size_t alignment)>;

class Machine {
 public:
  // archive: null for a plain pickle (no storages). load_record: null to read
  // each record with the archive's getRecord.
  Machine(caffe2::serialize::PyTorchStreamReader* archive, std::string label, PickleVocabulary vocabulary,
          RecordLoader load_record = nullptr)
      : archive_(archive), label_(std::move(label)), vocabulary_(vocabulary), load_record_(std::move(load_record)) {}

  c10::IValue run(const uint8_t* data, size_t size) {
    data_ = data;
    size_ = size;
    for (;;) {
      const size_t at = pos_;
      const uint8_t op = byte();
      if (op == '.') break;  // STOP
      step(op, at);
      check_bounds();
    }
    if (stack_.size() != 1 || stack_[0].kind != Item::Kind::Value) bad("data.pkl does not end with one value");
    return stack_[0].value;
  }

 private:
  [[noreturn]] void bad(const std::string& what) const { fail(ErrorCode::IO, label_ + ": " + what); }

  const uint8_t* take(size_t n) {
    if (n > size_ - pos_) bad("data.pkl ends inside an opcode (offset " + std::to_string(pos_) + ")");
    const uint8_t* p = data_ + pos_;
    pos_ += n;
    return p;
  }
  uint8_t byte() { return *take(1); }
  uint64_t little(size_t n) {
    const uint8_t* p = take(n);
    uint64_t v = 0;
    for (size_t i = 0; i < n; ++i) v |= uint64_t{p[i]} << (8 * i);
    return v;
  }
  std::string text(size_t n) {
    const uint8_t* p = take(n);
    return std::string(reinterpret_cast<const char*>(p), n);
  }
  std::string line() {
    const size_t start = pos_;
    while (byte() != '\n') {
    }
    return std::string(reinterpret_cast<const char*>(data_ + start), pos_ - start - 1);
  }

  Item pop() {
    if (stack_.size() <= floor()) bad("data.pkl pops an empty stack");
    Item item = std::move(stack_.back());
    stack_.pop_back();
    return item;
  }
  size_t floor() const { return marks_.empty() ? 0 : marks_.back(); }
  std::vector<Item> pop_to_mark() {
    if (marks_.empty()) bad("data.pkl uses a mark it never set");
    std::vector<Item> items(std::make_move_iterator(stack_.begin() + static_cast<std::ptrdiff_t>(marks_.back())),
                            std::make_move_iterator(stack_.end()));
    stack_.resize(marks_.back());
    marks_.pop_back();
    return items;
  }
  void push(c10::IValue v) { stack_.push_back(Item{Item::Kind::Value, std::move(v), {}, {}}); }
  void check_bounds() const {
    if (stack_.size() > kMaxStackItems) {
      bad("data.pkl stacks more than " + std::to_string(kMaxStackItems) + " items at once");
    }
    if (memo_.size() > kMaxMemoEntries) {
      bad("data.pkl memoizes more than " + std::to_string(kMaxMemoEntries) + " values");
    }
  }
  c10::IValue value(Item item, const char* where) {
    if (item.kind == Item::Kind::Inert) return c10::IValue();  // skipped data (NumPy's): None
    if (item.kind != Item::Kind::Value) bad(std::string("data.pkl holds a ") + describe(item) + " as " + where);
    return std::move(item.value);
  }
  static std::string describe(const Item& item) {
    switch (item.kind) {
      case Item::Kind::Global: return "global " + item.name;
      case Item::Kind::Storage: return "bare storage";
      case Item::Kind::RawTuple: return "tuple holding a storage or global";
      case Item::Kind::Inert: return "NumPy object";
      default: return item.value.tagKind();
    }
  }

  // The weight of a container of `items` (plus `base`), refused past kMaxPickleValues.
  size_t weigh(const std::vector<Item>& items, size_t base) {
    for (const Item& i : items) {
      base += i.weight;
      if (base > kMaxPickleValues) {
        bad("data.pkl shares values into a structure of more than " + std::to_string(kMaxPickleValues) +
            " values (a pickle bomb?)");
      }
    }
    return base;
  }

  // Containers: their depth, and whether they were placed inside another. A
  // placed container never changes again: a state dict's pickle fills each
  // container before placing it (pickle.py and torch's pickler both do), and
  // refusing later changes keeps every depth final once it counts towards a
  // parent's, and makes cycles (a list appended to itself) impossible.
  struct Container {
    c10::IValue keep;  // keeps the address from being reused while it is a key
    size_t depth = 1;
    bool placed = false;
  };
  static bool is_container(const c10::IValue& v) { return v.isList() || v.isGenericDict() || v.isTuple(); }
  Container& container(const c10::IValue& v) {
    auto [it, fresh] = containers_.try_emplace(v.internalToPointer());
    if (fresh) it->second.keep = v;  // first seen: as made, empty
    return it->second;
  }
  size_t depth_of(const Item& item) {
    if (item.kind == Item::Kind::RawTuple) return item.depth;
    if (item.kind != Item::Kind::Value || !is_container(item.value)) return 0;
    return container(item.value).depth;
  }
  // Marks items as placed in a container and returns the depth that container
  // needs (1 + the deepest item), refused past kMaxPickleDepth.
  size_t place(const std::vector<Item>& items) {
    size_t deepest = 0;
    for (const Item& i : items) {
      deepest = std::max(deepest, depth_of(i));
      if (i.kind == Item::Kind::Value && is_container(i.value)) container(i.value).placed = true;
    }
    if (deepest + 1 > kMaxPickleDepth) {
      bad("data.pkl nests containers more than " + std::to_string(kMaxPickleDepth) +
          " levels deep, which no state dict does");
    }
    return deepest + 1;
  }
  // Before items go into the container on top of the stack.
  void grow(const std::vector<Item>& items) {
    const size_t needed = place(items);
    Container& target = container(stack_.back().value);
    if (target.placed) {
      bad("data.pkl changes a " + stack_.back().value.tagKind() +
          " after placing it inside another (a shared or self-referencing structure, which no state dict holds)");
    }
    target.depth = std::max(target.depth, needed);
  }

  void make_tuple(std::vector<Item> items) {
    const size_t weight = weigh(items, 1);
    const size_t depth = place(items);
    bool plain = true;
    for (const Item& i : items) plain = plain && (i.kind == Item::Kind::Value || i.kind == Item::Kind::Inert);
    if (!plain) {
      Item raw{Item::Kind::RawTuple, {}, {}, std::make_shared<const std::vector<Item>>(std::move(items))};
      raw.weight = weight;
      raw.depth = depth;
      stack_.push_back(std::move(raw));
      return;
    }
    std::vector<c10::IValue> values;
    for (Item& i : items) values.push_back(value(std::move(i), "a tuple element"));
    push(c10::ivalue::Tuple::create(std::move(values)));
    stack_.back().weight = weight;
    container(stack_.back().value).depth = depth;
  }
  static std::vector<Item> tuple_items(const Item& item) {
    if (item.kind == Item::Kind::RawTuple) return *item.items;
    std::vector<Item> out;
    if (item.kind == Item::Kind::Value && item.value.isTuple()) {
      for (const auto& v : item.value.toTupleRef().elements()) out.push_back(Item{Item::Kind::Value, v, {}, {}});
    }
    return out;
  }

  void set_items(std::vector<Item> items) {
    if (!stack_.empty() && stack_.back().kind == Item::Kind::Inert) return;  // an inert object's content: skipped
    if (stack_.empty() || stack_.back().kind != Item::Kind::Value || !stack_.back().value.isGenericDict()) {
      bad("data.pkl sets items on something that is not a dict");
    }
    if (items.size() % 2 != 0) bad("data.pkl sets a key without a value");
    stack_.back().weight = weigh(items, stack_.back().weight);
    grow(items);
    c10::impl::GenericDict dict = stack_.back().value.toGenericDict();
    for (size_t i = 0; i < items.size(); i += 2) {
      c10::IValue key = value(std::move(items[i]), "a dict key");
      if (vocabulary_ == PickleVocabulary::DcpMetadata && key.isGenericDict()) key = dcp_index_key(key);
      if (!key.isString() && !key.isInt() && !key.isDouble() && !key.isBool()) {
        bad("data.pkl has a dict key of type " + key.tagKind());
      }
      dict.insert_or_assign(std::move(key), value(std::move(items[i + 1]), "a dict value"));
    }
  }
  // storage_data's keys, MetadataIndex(fqn, offset, index): dcp_chunk_key(fqn, offset).
  c10::IValue dcp_index_key(const c10::IValue& key) const {
    const c10::impl::GenericDict index = key.toGenericDict();
    auto cls = index.find("__class__"), fqn = index.find("fqn"), offset = index.find("offset");
    if (cls == index.end() || !cls->value().isString() || cls->value().toStringRef() != "MetadataIndex" ||
        fqn == index.end() || !fqn->value().isString()) {
      bad("data.pkl has a dict key that is not a MetadataIndex");
    }
    std::vector<int64_t> offsets;
    if (offset != index.end() && !offset->value().isNone() && !int_list(offset->value(), offsets)) {
      bad("data.pkl has a MetadataIndex whose offset is not a list of sizes");
    }
    return dcp_chunk_key(fqn->value().toStringRef(), offsets);
  }

  void append(std::vector<Item> items) {
    if (!stack_.empty() && stack_.back().kind == Item::Kind::Inert) return;  // an inert object's content: skipped
    if (stack_.empty() || stack_.back().kind != Item::Kind::Value || !stack_.back().value.isList()) {
      bad("data.pkl appends to something that is not a list");
    }
    stack_.back().weight = weigh(items, stack_.back().weight);
    grow(items);
    c10::List<c10::IValue> list = stack_.back().value.toList();
    for (Item& i : items) list.push_back(value(std::move(i), "a list element"));
  }

  void global(const std::string& module, const std::string& name) {
    const std::string full = module + "." + name;
    const bool counter = vocabulary_ == PickleVocabulary::Scheduler && full == "collections.Counter";
    const bool dcp = vocabulary_ == PickleVocabulary::DcpMetadata;
    if (dcp && dcp_dtype(full)) {  // a dtype is its name
      push(full);
      return;
    }
    if (!allowed_global(full) && !inert_global(full, vocabulary_) && !counter && !script_class(full, vocabulary_) &&
        !(dcp && (dcp_classes().count(full) == 1 || dcp_wrapper(full)))) {
      bad("the pickle names the global " + full.substr(0, 200) +
          ", which is not part of a state dict's data; refusing to read it (it could run code)");
    }
    stack_.push_back(Item{Item::Kind::Global, {}, full, {}});
  }

  // BINPERSID: ("storage", torch.<Type>Storage, key, location, numel) -> the data/<key> record.
  void persistent_load(const Item& pid) {
    std::vector<Item> f = tuple_items(pid);
    if (f.size() != 5 || f[0].kind != Item::Kind::Value || !f[0].value.isString() ||
        f[0].value.toStringRef() != "storage" || f[1].kind != Item::Kind::Global || !f[2].value.isString() ||
        !f[4].value.isInt()) {
      bad("data.pkl has a persistent id that is not (\"storage\", type, key, location, numel)");
    }
    auto type = storage_types().find(f[1].name);
    if (type == storage_types().end()) bad("data.pkl uses " + f[1].name + " as a storage type");
    const std::string key = f[2].value.toStringRef();
    auto seen = storages_.find(key);
    if (seen != storages_.end() && (seen->second.scalar_type() != type->second || !f[4].value.isInt() ||
                                    seen->second.numel() != f[4].value.toInt())) {
      bad("data.pkl names the storage \"" + key.substr(0, 100) + "\" twice with different types or sizes");
    }
    if (seen == storages_.end()) {
      const std::string record = "data/" + key;
      if (archive_ == nullptr) bad("the pickle names a storage, which only a torch.save archive holds");
      if (key.empty() || key.find('/') != std::string::npos || !archive_->hasRecord(record)) {
        bad("the storage \"" + key.substr(0, 100) + "\" has no record in the archive");
      }
      const int64_t numel = f[4].value.toInt();
      const size_t item_size = c10::elementSize(type->second);
      const bool sized = numel >= 0 && static_cast<uint64_t>(numel) <= std::numeric_limits<uint64_t>::max() / item_size;
      auto [data, bytes] = load_record_ && sized
                               ? load_record_(record, static_cast<size_t>(numel) * item_size, item_size)
                               : archive_->getRecord(record);
      if (numel < 0 || static_cast<uint64_t>(numel) != bytes / item_size || bytes % item_size != 0) {
        bad("storage \"" + key + "\" has " + std::to_string(bytes) + " bytes, not " + std::to_string(numel) +
            " elements of " + c10::toString(type->second));
      }
      c10::Storage storage(c10::Storage::use_byte_size_t(), bytes, std::move(data), nullptr, false);
      at::Tensor whole = at::empty({0}, at::TensorOptions().dtype(type->second)).set_(storage, 0, {numel}, {1});
      seen = storages_.emplace(key, whole).first;
    }
    stack_.push_back(Item{Item::Kind::Storage, seen->second, {}, {}});
  }

  static bool int_list(const c10::IValue& v, std::vector<int64_t>& out) {
    if (!v.isTuple()) return false;
    for (const auto& e : v.toTupleRef().elements()) {
      if (!e.isInt() || e.toInt() < 0) return false;
      out.push_back(e.toInt());
    }
    return true;
  }

  // A view must lie inside its storage, in bytes: a view past the end read the
  // heap (and the next save_state wrote it to disk), and a stride of 2^40
  // wrapped the old element arithmetic and crashed. Every product and sum is
  // checked for overflow. A view with more elements than its storage (strides
  // that overlap) is refused too: a state dict never holds one, and copying it
  // (contiguous()) would allocate by its size rather than by the file's bytes.
  void check_view(const at::Tensor& whole, int64_t offset, const std::vector<int64_t>& sizes,
                  const std::vector<int64_t>& strides) {
    const std::string shape = c10::str(at::IntArrayRef(sizes)) + " with strides " + c10::str(at::IntArrayRef(strides)) +
                              " at offset " + std::to_string(offset);
    const int64_t storage_bytes = static_cast<int64_t>(whole.storage().nbytes());
    const int64_t item = static_cast<int64_t>(whole.element_size());
    if (offset < 0) bad("data.pkl has a tensor of size " + shape + ", a negative offset");
    int64_t numel = 1;
    bool overflow = false;
    for (int64_t size : sizes) overflow = overflow || __builtin_mul_overflow(size, numel, &numel);
    if (overflow) bad("data.pkl has a tensor of size " + shape + ", more elements than 64 bits count");
    if (numel == 0) return;  // an empty view reads nothing
    int64_t last = offset;   // the last element the view reaches
    for (size_t d = 0; d < sizes.size(); ++d) {
      int64_t span = 0;
      overflow = overflow || __builtin_mul_overflow(sizes[d] - 1, strides[d], &span) ||
                 __builtin_add_overflow(last, span, &last);
    }
    int64_t end_byte = 0;
    overflow = overflow || __builtin_add_overflow(last, int64_t{1}, &end_byte) ||
               __builtin_mul_overflow(end_byte, item, &end_byte);
    if (overflow || end_byte > storage_bytes) {
      bad("data.pkl has a tensor of size " + shape + ", which reaches beyond its storage of " +
          std::to_string(storage_bytes) + " bytes");
    }
    if (numel > whole.numel()) {
      bad("data.pkl has a tensor of size " + shape + ", more elements than its storage's " +
          std::to_string(whole.numel()) + " (overlapping strides)");
    }
  }

  // _rebuild_tensor_v2(storage, offset, size, stride, requires_grad, hooks[, metadata]).
  at::Tensor rebuild_tensor(const std::vector<Item>& args) {
    std::vector<int64_t> sizes, strides;
    if (args.size() < 6 || args[0].kind != Item::Kind::Storage || !args[1].value.isInt() ||
        !int_list(args[2].value, sizes) || !int_list(args[3].value, strides) || sizes.size() != strides.size()) {
      bad("data.pkl rebuilds a tensor from arguments other than (storage, offset, size, stride, ...)");
    }
    const at::Tensor& whole = args[0].value.toTensor();
    const int64_t offset = args[1].value.toInt();
    check_view(whole, offset, sizes, strides);
    return at::empty({0}, whole.options()).set_(whole.storage(), offset, sizes, strides);
  }

  // List[int], List[float], List[bool] or List[Tensor] from the items torch's
  // pickler wrote for one, refusing an item of another type.
  c10::IValue typed_list(const std::string& builder, c10::ArrayRef<c10::IValue> items) const {
    auto fill = [&](auto list, bool (c10::IValue::*is)() const, const char* type) {
      for (const c10::IValue& v : items) {
        if (!(v.*is)()) bad("data.pkl builds a list of " + std::string(type) + " from a " + v.tagKind());
        list.push_back(v.to<typename decltype(list)::value_type>());
      }
      return c10::IValue(std::move(list));
    };
    if (builder == "torch.jit._pickle.build_intlist") return fill(c10::List<int64_t>(), &c10::IValue::isInt, "int");
    if (builder == "torch.jit._pickle.build_doublelist") {
      return fill(c10::List<double>(), &c10::IValue::isDouble, "float");
    }
    if (builder == "torch.jit._pickle.build_boollist") return fill(c10::List<bool>(), &c10::IValue::isBool, "bool");
    return fill(c10::List<at::Tensor>(), &c10::IValue::isTensor, "Tensor");
  }

  void reduce() {
    Item args = pop();
    Item callable = pop();
    if (callable.kind != Item::Kind::Global) bad("data.pkl calls a " + describe(callable));
    if (inert_global(callable.name, vocabulary_)) {  // allowed by the vocabulary: never called, its result skipped
      stack_.push_back(Item{Item::Kind::Inert, {}, {}, {}});
      return;
    }
    std::vector<Item> a = tuple_items(args);
    if (vocabulary_ == PickleVocabulary::DcpMetadata && dcp_wrapper(callable.name)) {
      if (callable.name == "pathlib.PosixPath") {  // StorageMeta's checkpoint_id: the path's parts, joined
        std::string path;
        for (Item& part : a) {
          c10::IValue v = value(std::move(part), "a path's part");
          if (!v.isString()) bad("data.pkl builds a path from a " + v.tagKind());
          path += (path.empty() || path.back() == '/' ? "" : "/") + v.toStringRef();
        }
        push(path);
        return;
      }
      // torch.Size(tuple), _get_layout(name), _MEM_FORMAT_ENCODING(int): the data they wrap.
      if (a.size() != 1 || a[0].kind != Item::Kind::Value)
        bad("data.pkl calls " + callable.name + " on " + std::to_string(a.size()) + " arguments");
      push(a[0].value);
      return;
    }
    if (callable.name == "collections.Counter") {  // MultiStepLR's milestones: the counts, as the dict they are
      if (a.empty()) {
        push(c10::impl::GenericDict(c10::AnyType::get(), c10::AnyType::get()));
      } else if (a.size() == 1 && a[0].kind == Item::Kind::Value && a[0].value.isGenericDict()) {
        push(a[0].value);
      } else {
        bad("data.pkl builds a Counter from something other than a dict");
      }
    } else if (callable.name == "torch.jit._pickle.restore_type_tag") {  // the value, its type tag dropped
      if (a.size() != 2 || a[0].kind != Item::Kind::Value) bad("data.pkl tags the type of something that is not data");
      push(a[0].value);
    } else if (list_builder(callable.name)) {  // the typed list, as LibTorch's unpickler builds it
      if (a.size() != 1 || a[0].kind != Item::Kind::Value || !a[0].value.isList()) {
        bad("data.pkl calls " + callable.name + " on something that is not a list");
      }
      push(typed_list(callable.name, a[0].value.toListRef()));
    } else if (callable.name == "collections.OrderedDict") {
      if (!a.empty()) bad("data.pkl builds an OrderedDict from arguments");
      push(c10::impl::GenericDict(c10::AnyType::get(), c10::AnyType::get()));
    } else if (callable.name == "torch._utils._rebuild_tensor_v2") {
      push(rebuild_tensor(a));
    } else if (callable.name == "torch._utils._rebuild_parameter") {
      if (a.empty() || a[0].kind != Item::Kind::Value || !a[0].value.isTensor()) {
        bad("data.pkl rebuilds a parameter from something that is not a tensor");
      }
      push(a[0].value);
    } else {
      bad("data.pkl calls " + callable.name + ", which is not a constructor of data");
    }
  }

  void step(uint8_t op, size_t at) {
    switch (op) {
      case 0x80:
        if (byte() > 5) bad("data.pkl has an unknown pickle protocol");
        return;                                           // PROTO
      case 0x95: take(8); return;                         // FRAME
      case '(': marks_.push_back(stack_.size()); return;  // MARK
      case '0': pop(); return;                            // POP
      case '1': pop_to_mark(); return;                    // POP_MARK
      case '2': {
        Item top = pop();
        stack_.push_back(top);
        stack_.push_back(top);
        return;
      }  // DUP
      case 'N': push(c10::IValue()); return;
      case 0x88: push(true); return;
      case 0x89: push(false); return;
      case 'K': push(static_cast<int64_t>(byte())); return;                           // BININT1
      case 'M': push(static_cast<int64_t>(little(2))); return;                        // BININT2
      case 'J': push(static_cast<int64_t>(static_cast<int32_t>(little(4)))); return;  // BININT
      case 0x8a: {                                                                    // LONG1
        const size_t n = byte();
        if (n > 8) bad("data.pkl has an integer wider than 64 bits");
        uint64_t v = little(n);
        if (n > 0 && n < 8 && (v >> (8 * n - 1)) & 1) v |= ~uint64_t{0} << (8 * n);  // sign-extend
        push(static_cast<int64_t>(v));
        return;
      }
      case 'G': {  // BINFLOAT: big-endian double
        const uint8_t* p = take(8);
        uint64_t bits = 0;
        for (int i = 0; i < 8; ++i) bits = bits << 8 | p[i];
        double d;
        std::memcpy(&d, &bits, sizeof d);
        push(d);
        return;
      }
      case 'X':
        push(text(little(4)));
        return;  // BINUNICODE
      // BINBYTES, SHORT_BINBYTES, BINBYTES8: Python bytes (protocol 3+), read as a string.
      case 'B': push(text(little(4))); return;
      case 'C': push(text(byte())); return;
      case 0x8e: push(text(little(8))); return;
      case 0x8c: push(text(byte())); return;     // SHORT_BINUNICODE
      case 0x8d: push(text(little(8))); return;  // BINUNICODE8
      case '}': push(c10::impl::GenericDict(c10::AnyType::get(), c10::AnyType::get())); return;
      case ']': push(c10::impl::GenericList(c10::AnyType::get())); return;
      case ')': make_tuple({}); return;
      case 't': make_tuple(pop_to_mark()); return;
      case 0x85:
      case 0x86:
      case 0x87: {  // TUPLE1..3
        std::vector<Item> items(op - 0x84);
        for (size_t i = items.size(); i-- > 0;) items[i] = pop();
        make_tuple(std::move(items));
        return;
      }
      case 'l': {
        auto items = pop_to_mark();
        push(c10::impl::GenericList(c10::AnyType::get()));
        append(std::move(items));
        return;
      }
      case 'd': {
        auto items = pop_to_mark();
        push(c10::impl::GenericDict(c10::AnyType::get(), c10::AnyType::get()));
        set_items(std::move(items));
        return;
      }
      case 's': {
        Item v = pop();
        Item k = pop();
        std::vector<Item> kv;
        kv.push_back(std::move(k));
        kv.push_back(std::move(v));
        set_items(std::move(kv));
        return;
      }
      case 'u': set_items(pop_to_mark()); return;
      case 'a': {
        std::vector<Item> one;
        one.push_back(pop());
        append(std::move(one));
        return;
      }
      case 'e': append(pop_to_mark()); return;
      case 'q': memo_put(byte()); return;         // BINPUT
      case 'r': memo_put(little(4)); return;      // LONG_BINPUT
      case 0x94: memo_put(memo_.size()); return;  // MEMOIZE
      case 'h': memo_get(byte()); return;         // BINGET
      case 'j': memo_get(little(4)); return;      // LONG_BINGET
      case 'c': {
        std::string module = line();
        global(module, line());
        return;
      }             // GLOBAL
      case 0x93: {  // STACK_GLOBAL
        c10::IValue name = value(pop(), "a global's name"), module = value(pop(), "a global's module");
        if (!name.isString() || !module.isString()) bad("data.pkl names a global with non-strings");
        global(module.toStringRef(), name.toStringRef());
        return;
      }
      case 'R': reduce(); return;
      case 0x81: {  // NEWOBJ: cls.__new__(cls, *args), only for an inert class (never called)
        pop();
        Item cls = pop();
        if (cls.kind == Item::Kind::Global &&
            ((vocabulary_ == PickleVocabulary::DcpMetadata && dcp_classes().count(cls.name) == 1) ||
             script_class(cls.name,
                          vocabulary_))) {  // a DCP dataclass or TorchScript object: a dict of its fields, tagged
          c10::impl::GenericDict object(c10::AnyType::get(), c10::AnyType::get());
          object.insert("__class__", cls.name.substr(cls.name.rfind('.') + 1));
          push(object);
          return;
        }
        if (cls.kind != Item::Kind::Global || !inert_global(cls.name, vocabulary_)) {
          bad("data.pkl creates an object of a " + describe(cls));
        }
        stack_.push_back(Item{Item::Kind::Inert, {}, {}, {}});
        return;
      }
      case 'Q': persistent_load(pop()); return;  // BINPERSID
      case 'b': {                                // BUILD
        Item state = pop();
        // A state dict is an OrderedDict with a _metadata attribute (module
        // versions), which the values do not need; an inert object's state
        // (an ndarray's words, a dtype's flags) is skipped with it.
        if (!stack_.empty() && stack_.back().kind == Item::Kind::Inert) return;
        if (stack_.empty() || stack_.back().kind != Item::Kind::Value || !stack_.back().value.isGenericDict()) {
          bad("data.pkl sets attributes of a " + (stack_.empty() ? std::string("nothing") : describe(stack_.back())));
        }
        if ((vocabulary_ == PickleVocabulary::DcpMetadata || vocabulary_ == PickleVocabulary::TorchScriptModule) &&
            stack_.back().value.toGenericDict().contains("__class__")) {
          // A DCP dataclass's fields (a dict), or TensorProperties' __getstate__ tuple; a
          // TorchScript object's attributes (or what its __getstate__ returned).
          std::vector<Item> fields;
          if (state.kind == Item::Kind::Value && state.value.isGenericDict()) {
            for (const auto& entry : state.value.toGenericDict()) {
              fields.push_back(Item{Item::Kind::Value, entry.key(), {}, {}});
              fields.push_back(Item{Item::Kind::Value, entry.value(), {}, {}});
            }
          } else {
            fields.push_back(Item{Item::Kind::Value, std::string("__state__"), {}, {}});
            fields.push_back(std::move(state));
          }
          set_items(std::move(fields));
        }
        return;
      }
      default: {
        char hex[8];
        std::snprintf(hex, sizeof hex, "0x%02x", op);
        bad(std::string("data.pkl has the opcode ") + hex + " at offset " + std::to_string(at) +
            ", which a state dict's pickle does not use");
      }
    }
  }
  void memo_put(uint64_t index) {
    if (stack_.empty()) bad("data.pkl memoizes an empty stack");
    memo_[index] = stack_.back();
  }
  void memo_get(uint64_t index) {
    auto it = memo_.find(index);
    if (it == memo_.end()) bad("data.pkl reads memo entry " + std::to_string(index) + ", which it never stored");
    stack_.push_back(it->second);
  }

  caffe2::serialize::PyTorchStreamReader* archive_;
  std::string label_;
  PickleVocabulary vocabulary_;
  RecordLoader load_record_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0, pos_ = 0;
  std::vector<Item> stack_;
  std::vector<size_t> marks_;
  std::unordered_map<uint64_t, Item> memo_;
  std::map<std::string, at::Tensor> storages_;
  std::unordered_map<const void*, Container> containers_;
};

}  // namespace

std::string dcp_chunk_key(const std::string& fqn, const std::vector<int64_t>& offsets) {
  std::string key = fqn + "@";
  for (size_t i = 0; i < offsets.size(); ++i) key += (i ? "," : "") + std::to_string(offsets[i]);
  return key;
}

c10::IValue read_pickle(const std::string& bytes, const std::string& label, PickleVocabulary vocabulary) {
  Machine machine(nullptr, label, vocabulary);
  try {
    return machine.run(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    std::string message = e.what();
    fail(ErrorCode::IO, label + ": unreadable (" + message.substr(0, message.find('\n')) + ")");
  }
}

namespace {

// RecordLoader with the archive it reads.
using ArchiveRecordLoader = std::function<std::tuple<at::DataPtr, size_t>(
    caffe2::serialize::PyTorchStreamReader& archive, const std::string& record, size_t bytes, size_t alignment)>;

// Reads data.pkl and the value it holds, with its storages from load_record
// (null: the archive's getRecord).
c10::IValue read_archive(const std::shared_ptr<caffe2::serialize::ReadAdapterInterface>& bytes,
                         const std::string& label, PickleVocabulary vocabulary,
                         const ArchiveRecordLoader& load_record) {
  std::unique_ptr<caffe2::serialize::PyTorchStreamReader> archive;
  std::tuple<at::DataPtr, size_t> pickle;
  try {
    archive = std::make_unique<caffe2::serialize::PyTorchStreamReader>(bytes);
    if (archive->hasRecord("byteorder")) {
      auto [order, n] = archive->getRecord("byteorder");
      require(std::string(static_cast<const char*>(order.get()), n) == "little", ErrorCode::Unsupported,
              label + ": stored big-endian");
    }
    pickle = archive->getRecord("data.pkl");
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    std::string message = e.what();
    fail(ErrorCode::IO, label + ": not a readable torch.save archive (" + message.substr(0, message.find('\n')) + ")");
  }
  RecordLoader loader;
  if (load_record) {
    loader = [&](const std::string& record, size_t n, size_t alignment) {
      return load_record(*archive, record, n, alignment);
    };
  }
  Machine machine(archive.get(), label, vocabulary, loader);
  try {
    return machine.run(static_cast<const uint8_t*>(std::get<0>(pickle).get()), std::get<1>(pickle));
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {  // LibTorch refusing a record or a tensor: still the file's fault
    std::string message = e.what();
    fail(ErrorCode::IO, label + ": unreadable (" + message.substr(0, message.find('\n')) + ")");
  }
}

}  // namespace

c10::IValue read_torch_save(const std::string& bytes, const std::string& label, PickleVocabulary vocabulary) {
  if (!is_zip_archive(bytes)) {
    fail(ErrorCode::IO, label +
                            ": not a torch.save zip archive (the legacy format of torch.save before "
                            "PyTorch 1.6 is not read)");
  }
  require_stored_records(bytes, label);
  return read_archive(
      std::make_shared<caffe2::serialize::MemoryReadAdapter>(bytes.data(), static_cast<off_t>(bytes.size())), label,
      vocabulary, nullptr);
}

c10::IValue read_torch_save_file(const std::string& path, const std::string& label, PickleVocabulary vocabulary,
                                 StorageReads reads) {
  const std::shared_ptr<ArchiveFile> file = ArchiveFile::open(path);
  if (file->size() < 4 || file->read(0, 4) != "PK\x03\x04") {
    fail(ErrorCode::IO, label +
                            ": not a torch.save zip archive (the legacy format of torch.save before "
                            "PyTorch 1.6 is not read)");
  }
  const std::map<std::string, uint64_t> records =
      stored_records(*file, label,
                     vocabulary == PickleVocabulary::TorchScriptModule ? CompressedRecords::LeftOutOutsideData
                                                                       : CompressedRecords::Refused);
  ArchiveRecordLoader load_record;
  if (reads == StorageReads::Map) {
    // A view of the mapped file when the record holds exactly the storage's
    // bytes at an aligned place; otherwise read as usual (the reader then
    // judges the size).
    load_record = [&](caffe2::serialize::PyTorchStreamReader& archive, const std::string& record, size_t n,
                      size_t alignment) -> std::tuple<at::DataPtr, size_t> {
      for (const auto& [name, stored] : records) {
        const size_t slash = name.find('/');
        if (slash == std::string::npos || name.compare(slash + 1, std::string::npos, record) != 0) continue;
        if (stored != n || n == 0) break;
        at::DataPtr mapped = file->map(archive.getRecordOffset(record), n, alignment);
        if (mapped) return {std::move(mapped), n};
        break;
      }
      return archive.getRecord(record);
    };
  }
  return read_archive(file->adapter(), label, vocabulary, load_record);
}

}  // namespace accel::detail
