#include "formats/dcp_writer.hpp"

#include <ATen/ATen.h>

#include <algorithm>
#include <map>

#include "accel/error.hpp"
#include "formats/torch_pickle.hpp"

namespace accel::detail {

namespace {

void collect(const std::vector<int64_t>& shape, size_t dim, std::vector<int64_t>& prefix, int64_t base, int64_t begin,
             int64_t end, std::vector<DcpBox>& out) {
  if (begin >= end) return;
  const size_t n = shape.size();
  if (dim == n) {  // one element
    out.push_back({prefix, std::vector<int64_t>(n, 1), base + begin, 1});
    return;
  }
  int64_t inner = 1;
  for (size_t d = dim + 1; d < n; ++d) inner *= shape[d];
  if (inner == 0) return;
  // Whole rows [r0, r1) of this dimension, the prefix's indices fixed.
  auto rows = [&](int64_t r0, int64_t r1) {
    DcpBox box;
    box.offsets = prefix;
    box.offsets.push_back(r0);
    box.sizes.assign(prefix.size(), 1);
    box.sizes.push_back(r1 - r0);
    for (size_t d = dim + 1; d < n; ++d) {
      box.offsets.push_back(0);
      box.sizes.push_back(shape[d]);
    }
    box.begin = base + r0 * inner;
    box.numel = (r1 - r0) * inner;
    out.push_back(std::move(box));
  };
  auto within = [&](int64_t row, int64_t from, int64_t to) {
    prefix.push_back(row);
    collect(shape, dim + 1, prefix, base + row * inner, from, to, out);
    prefix.pop_back();
  };
  const int64_t first = begin / inner, last = (end - 1) / inner;
  if (first == last) {
    if (begin % inner == 0 && end - begin == inner) {
      rows(first, first + 1);
    } else {
      within(first, begin - first * inner, end - first * inner);
    }
    return;
  }
  int64_t from = first, to = last + 1;
  if (begin % inner != 0) {
    within(first, begin - first * inner, inner);
    from = first + 1;
  }
  const bool partial_last = end % inner != 0;
  if (partial_last) to = last;
  if (from < to) rows(from, to);
  if (partial_last) within(last, 0, end - last * inner);
}

nlohmann::json path_json(const std::vector<c10::IValue>& path) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& p : path) {
    if (p.isInt()) {
      out.push_back(p.toInt());
    } else {
      out.push_back(p.toStringRef());
    }
  }
  return out;
}

const char* dtype_name(at::ScalarType t) {
  switch (t) {
    case at::kDouble: return "float64";
    case at::kFloat: return "float32";
    case at::kHalf: return "float16";
    case at::kBFloat16: return "bfloat16";
    case at::kLong: return "int64";
    case at::kInt: return "int32";
    case at::kShort: return "int16";
    case at::kChar: return "int8";
    case at::kByte: return "uint8";
    case at::kBool: return "bool";
    default: fail(ErrorCode::Unsupported, std::string("a distributed checkpoint of ") + c10::toString(t) + " tensors");
  }
}

// Python's pickle protocol 2, just what Metadata's dataclasses need.
class Pickler {
 public:
  Pickler() { out_ += "\x80\x02"; }
  void global(const std::string& module, const std::string& name) { out_ += "c" + module + "\n" + name + "\n"; }
  void str(const std::string& s) {
    out_ += 'X';
    for (int i = 0; i < 4; ++i) out_ += static_cast<char>((s.size() >> (8 * i)) & 0xff);
    out_ += s;
  }
  void integer(int64_t v) {
    if (v >= INT32_MIN && v <= INT32_MAX) {
      out_ += 'J';
      for (int i = 0; i < 4; ++i) out_ += static_cast<char>((static_cast<uint32_t>(v) >> (8 * i)) & 0xff);
      return;
    }
    out_ += "\x8a\x08";  // LONG1, 8 bytes, two's complement
    for (int i = 0; i < 8; ++i) out_ += static_cast<char>((static_cast<uint64_t>(v) >> (8 * i)) & 0xff);
  }
  void none() { out_ += 'N'; }
  void boolean(bool b) { out_ += b ? '\x88' : '\x89'; }
  void op(char c) { out_ += c; }
  // cls.__new__(cls): what pickle writes for a dataclass before its state.
  void object(const std::string& module, const std::string& name) {
    global(module, name);
    out_ += ")\x81";  // EMPTY_TUPLE, NEWOBJ
  }
  // fields: the BUILD of a dict state, pairs pushed by `fill`.
  template <class F>
  void fields(F&& fill) {
    out_ += "}(";  // EMPTY_DICT, MARK
    fill();
    out_ += "ub";  // SETITEMS, BUILD
  }
  void size(const std::vector<int64_t>& dims) {  // torch.Size(tuple)
    global("torch", "Size");
    out_ += '(';
    for (int64_t d : dims) integer(d);
    out_ += "t\x85R";  // TUPLE, TUPLE1, REDUCE
  }
  std::string done() { return out_ + "."; }

 private:
  std::string out_;
};

constexpr const char* kMetadataModule = "torch.distributed.checkpoint.metadata";

}  // namespace

std::vector<DcpBox> flat_range_boxes(const std::vector<int64_t>& shape, int64_t begin, int64_t end) {
  std::vector<DcpBox> out;
  std::vector<int64_t> prefix;
  collect(shape, 0, prefix, 0, begin, end, out);
  return out;
}

void DcpFileWriter::add_chunk(const std::string& key, const std::vector<c10::IValue>& path,
                              const std::vector<int64_t>& size, const std::vector<int64_t>& offsets,
                              const at::Tensor& values) {
  items_.push_back({{{"key", key},
                     {"path", path_json(path)},
                     {"dtype", dtype_name(values.scalar_type())},
                     {"size", size},
                     {"offsets", offsets},
                     {"sizes", values.sizes().vec()},
                     {"file", file_}},
                    values.detach()});
}

void DcpFileWriter::add_object(const std::string& key, const std::vector<c10::IValue>& path, const c10::IValue& value) {
  items_.push_back({{{"key", key}, {"path", path_json(path)}, {"object", true}, {"file", file_}}, value});
}

namespace {

class CountingSink final : public ByteSink {
 public:
  explicit CountingSink(ByteSink& sink) : sink_(sink) {}
  void write(const void* data, size_t n) override {
    sink_.write(data, n);
    count += n;
  }
  uint64_t count = 0;

 private:
  ByteSink& sink_;
};

}  // namespace

void DcpFileWriter::write(ByteSink& sink) {
  CountingSink out(sink);
  records_ = nlohmann::json::array();
  for (const Item& item : items_) {
    const uint64_t offset = out.count;
    if (item.value.isTensor()) {
      // Its own storage: a view would save the whole storage it looks into.
      write_torch_save(out, item.value.toTensor().to(at::kCPU).clone(at::MemoryFormat::Contiguous));
    } else {
      write_torch_save(out, item.value);
    }
    nlohmann::json record = item.record;
    record["offset"] = offset;
    record["length"] = out.count - offset;
    records_.push_back(std::move(record));
  }
}

std::string dcp_metadata(const std::vector<nlohmann::json>& records_per_file) {
  struct TensorEntry {
    std::string dtype;
    std::vector<int64_t> size;
    std::vector<const nlohmann::json*> chunks;
  };
  std::map<std::string, TensorEntry> tensors;
  std::map<std::string, const nlohmann::json*> objects;
  std::map<std::string, const nlohmann::json*> paths;
  for (const auto& records : records_per_file) {
    for (const auto& r : records) {
      const std::string key = r.at("key").get<std::string>();
      paths[key] = &r.at("path");
      if (r.contains("object")) {
        objects.emplace(key, &r);
        continue;
      }
      TensorEntry& t = tensors[key];
      const auto dtype = r.at("dtype").get<std::string>();
      const auto size = r.at("size").get<std::vector<int64_t>>();
      require(t.chunks.empty() || (t.dtype == dtype && t.size == size), ErrorCode::InvalidArgument,
              "distributed checkpoint: the processes disagree on the dtype or size of \"" + key + "\"");
      t.dtype = dtype;
      t.size = size;
      t.chunks.push_back(&r);
    }
  }
  Pickler p;
  p.object(kMetadataModule, "Metadata");
  p.fields([&] {
    p.str("state_dict_metadata");
    p.op('}');
    p.op('(');
    for (auto& entry : tensors) {  // not a structured binding: the lambdas below use it
      const std::string& key = entry.first;
      TensorEntry& t = entry.second;
      std::sort(t.chunks.begin(), t.chunks.end(), [](const nlohmann::json* a, const nlohmann::json* b) {
        return a->at("offsets").get<std::vector<int64_t>>() < b->at("offsets").get<std::vector<int64_t>>();
      });
      p.str(key);
      p.object(kMetadataModule, "TensorStorageMetadata");
      p.fields([&] {
        p.str("properties");
        p.object(kMetadataModule, "TensorProperties");
        // TensorProperties.__setstate__'s 5-tuple: dtype, layout, requires_grad, memory format, pin_memory.
        p.op('(');
        p.global("torch", t.dtype);
        p.global("torch.serialization", "_get_layout");
        p.str("torch.strided");
        p.op('\x85');
        p.op('R');
        p.boolean(false);
        p.global(kMetadataModule, "_MEM_FORMAT_ENCODING");
        p.integer(0);  // TORCH_CONTIGUOUS_FORMAT
        p.op('\x85');
        p.op('R');
        p.boolean(false);
        p.op('t');
        p.op('b');
        p.str("size");
        p.size(t.size);
        p.str("chunks");
        p.op(']');
        p.op('(');
        for (const nlohmann::json* c : t.chunks) {
          p.object(kMetadataModule, "ChunkStorageMetadata");
          p.fields([&] {
            p.str("offsets");
            p.size(c->at("offsets").get<std::vector<int64_t>>());
            p.str("sizes");
            p.size(c->at("sizes").get<std::vector<int64_t>>());
          });
        }
        p.op('e');
      });
    }
    for (const auto& [key, r] : objects) {
      p.str(key);
      p.object(kMetadataModule, "BytesStorageMetadata");
    }
    p.op('u');
    p.str("planner_data");
    p.op('}');
    p.op('(');
    for (const auto& [key, path] : paths) {
      p.str(key);
      p.op('(');
      for (const auto& part : *path) {
        if (part.is_number_integer()) {
          p.integer(part.get<int64_t>());
        } else {
          p.str(part.get<std::string>());
        }
      }
      p.op('t');
    }
    p.op('u');
    p.str("storage_data");
    p.op('}');
    p.op('(');
    auto storage = [&](const std::string& key, const std::vector<int64_t>* offsets, const nlohmann::json& r) {
      p.object(kMetadataModule, "MetadataIndex");
      p.fields([&] {
        p.str("fqn");
        p.str(key);
        p.str("offset");
        if (offsets) {
          p.size(*offsets);
        } else {
          p.none();
        }
        p.str("index");
        p.none();
      });
      p.object("torch.distributed.checkpoint.filesystem", "_StorageInfo");
      p.fields([&] {
        p.str("relative_path");
        p.str(r.at("file").get<std::string>());
        p.str("offset");
        p.integer(r.at("offset").get<int64_t>());
        p.str("length");
        p.integer(r.at("length").get<int64_t>());
        p.str("transform_descriptors");
        p.none();
      });
    };
    for (const auto& [key, t] : tensors) {
      for (const nlohmann::json* c : t.chunks) {
        const auto offsets = c->at("offsets").get<std::vector<int64_t>>();
        storage(key, &offsets, *c);
      }
    }
    for (const auto& [key, r] : objects) storage(key, nullptr, *r);
    p.op('u');
    p.str("storage_meta");
    p.none();
    p.str("version");
    p.str("1.0.0");
  });
  return p.done();
}

}  // namespace accel::detail
