#include "formats/dcp.hpp"

#include <ATen/ATen.h>

#include <filesystem>
#include <fstream>

#include "accel/error.hpp"
#include "core/file_io.hpp"
#include "formats/torch_pickle.hpp"

namespace accel::detail {

namespace {

using Dict = c10::impl::GenericDict;
constexpr int64_t kMaxDimension = int64_t{1} << 40;

// A DCP dataclass as the unpickler reads it: a dict tagged with its class.
Dict object_of(const c10::IValue& value, const char* cls, const std::string& where) {
  require(value.isGenericDict(), ErrorCode::IO, where + " is a " + value.tagKind() + ", not a " + cls);
  Dict dict = value.toGenericDict();
  auto tag = dict.find("__class__");
  require(tag != dict.end() && tag->value().isString() && tag->value().toStringRef() == cls, ErrorCode::IO,
          where + " is not a " + cls);
  return dict;
}

const c10::IValue& field(const Dict& dict, const char* name, const std::string& where) {
  auto it = dict.find(name);
  require(it != dict.end(), ErrorCode::IO, where + " lacks \"" + name + "\"");
  return it->value();
}

std::vector<int64_t> sizes_of(const c10::IValue& value, const std::string& where) {
  std::vector<int64_t> out;
  require(value.isTuple() || value.isList(), ErrorCode::IO, where + " is not a list of sizes");
  const auto elements = value.isTuple() ? value.toTupleRef().elements().vec() : value.toListRef().vec();
  for (const auto& e : elements) {
    require(e.isInt() && e.toInt() >= 0 && e.toInt() <= kMaxDimension, ErrorCode::IO,
            where + " holds a size that is not a count");
    out.push_back(e.toInt());
  }
  return out;
}

at::ScalarType dtype_named(const std::string& name, const std::string& where) {
  static const std::map<std::string, at::ScalarType> types{
      {"torch.float64", at::kDouble},    {"torch.float32", at::kFloat}, {"torch.float16", at::kHalf},
      {"torch.bfloat16", at::kBFloat16}, {"torch.int64", at::kLong},    {"torch.int32", at::kInt},
      {"torch.int16", at::kShort},       {"torch.int8", at::kChar},     {"torch.uint8", at::kByte},
      {"torch.bool", at::kBool}};
  auto it = types.find(name);
  require(it != types.end(), ErrorCode::IO, where + ": dtype " + name.substr(0, 60) + " is not read");
  return it->second;
}

DcpDirectory::Item item_of(const Dict& storage, const std::string& key, const std::string& where) {
  auto it = storage.find(key);
  require(it != storage.end(), ErrorCode::IO, where + " has no storage entry");
  const Dict info = object_of(it->value(), "_StorageInfo", where + "'s storage");
  const c10::IValue &path = field(info, "relative_path", where), &offset = field(info, "offset", where),
                    &length = field(info, "length", where);
  require(path.isString() && offset.isInt() && length.isInt() && offset.toInt() >= 0 && length.toInt() >= 0,
          ErrorCode::IO, where + "'s storage is not (file, offset, length)");
  const std::string file = path.toStringRef();
  // A plain name in the directory: "../x", "/etc/passwd" or "a/b" would read elsewhere.
  require(!file.empty() && file.find('/') == std::string::npos && file != "." && file != "..", ErrorCode::IO,
          where + "'s storage names the file \"" + file.substr(0, 80) + "\", which is not in the directory");
  auto transforms = info.find("transform_descriptors");
  require(transforms == info.end() || transforms->value().isNone(), ErrorCode::Unsupported,
          where + " is stored with transforms (compression or encryption), which are not read");
  return {file, offset.toInt(), length.toInt()};
}

}  // namespace

bool DcpDirectory::is_dcp(const std::string& dir) {
  std::error_code error;
  return std::filesystem::is_regular_file(dir + "/.metadata", error);
}

DcpDirectory DcpDirectory::open(const std::string& dir) {
  const std::string path = dir + "/.metadata";
  const c10::IValue value = read_pickle(read_regular_file(path), path, PickleVocabulary::DcpMetadata);
  const Dict metadata = object_of(value, "Metadata", path);
  const c10::IValue& entries = field(metadata, "state_dict_metadata", path);
  const c10::IValue& storage_value = field(metadata, "storage_data", path);
  require(entries.isGenericDict() && storage_value.isGenericDict(), ErrorCode::IO,
          path + ": state_dict_metadata or storage_data is not a dict");
  const Dict storage = storage_value.toGenericDict();
  DcpDirectory out;
  out.dir_ = dir;
  for (const auto& entry : entries.toGenericDict()) {
    require(entry.key().isString(), ErrorCode::IO, path + " has a key that is not a string");
    const std::string key = entry.key().toStringRef(), where = path + ": \"" + key.substr(0, 200) + "\"";
    require(entry.value().isGenericDict(), ErrorCode::IO, where + " is not storage metadata");
    const Dict meta = entry.value().toGenericDict();
    auto cls = meta.find("__class__");
    if (cls != meta.end() && cls->value().isString() && cls->value().toStringRef() == "BytesStorageMetadata") {
      out.objects_.emplace(key, item_of(storage, dcp_chunk_key(key, {}), where));
      continue;
    }
    const Dict tensor = object_of(entry.value(), "TensorStorageMetadata", where);
    const Dict properties = object_of(field(tensor, "properties", where), "TensorProperties", where);
    const c10::IValue& state = field(properties, "__state__", where + "'s properties");
    require(state.isTuple() && !state.toTupleRef().elements().empty() && state.toTupleRef().elements()[0].isString(),
            ErrorCode::IO, where + "'s properties do not start with a dtype");
    Tensor t;
    t.dtype = dtype_named(state.toTupleRef().elements()[0].toStringRef(), where);
    t.size = sizes_of(field(tensor, "size", where), where + "'s size");
    int64_t numel = 1, covered = 0;
    for (int64_t d : t.size) {
      require(d == 0 || numel <= kMaxDimension / d, ErrorCode::IO, where + " has an impossible number of elements");
      numel *= d;
    }
    const c10::IValue& chunks = field(tensor, "chunks", where);
    require(chunks.isList(), ErrorCode::IO, where + "'s chunks are not a list");
    for (const auto& c : chunks.toListRef()) {
      const Dict chunk = object_of(c, "ChunkStorageMetadata", where + "'s chunk");
      Chunk out_chunk;
      out_chunk.offsets = sizes_of(field(chunk, "offsets", where), where + "'s chunk offsets");
      out_chunk.sizes = sizes_of(field(chunk, "sizes", where), where + "'s chunk sizes");
      require(out_chunk.offsets.size() == t.size.size() && out_chunk.sizes.size() == t.size.size(), ErrorCode::IO,
              where + " has a chunk of another rank than the tensor's");
      int64_t volume = 1;
      for (size_t d = 0; d < t.size.size(); ++d) {
        require(out_chunk.offsets[d] + out_chunk.sizes[d] <= t.size[d], ErrorCode::IO,
                where + " has a chunk outside the tensor of size " + c10::str(at::IntArrayRef(t.size)));
        volume *= out_chunk.sizes[d];
      }
      for (const Chunk& other : t.chunks) {  // boxes that overlap would leave a hole elsewhere
        bool overlap = volume > 0;
        for (size_t d = 0; d < t.size.size() && overlap; ++d) {
          overlap = out_chunk.offsets[d] < other.offsets[d] + other.sizes[d] &&
                    other.offsets[d] < out_chunk.offsets[d] + out_chunk.sizes[d];
        }
        require(!overlap, ErrorCode::IO, where + " has two chunks that overlap");
      }
      covered += volume;
      out_chunk.item = item_of(storage, dcp_chunk_key(key, out_chunk.offsets), where);
      t.chunks.push_back(std::move(out_chunk));
    }
    require(covered == numel, ErrorCode::IO,
            where + "'s chunks hold " + std::to_string(covered) + " of its " + std::to_string(numel) + " elements");
    out.tensors_.emplace(key, std::move(t));
  }
  return out;
}

std::string DcpDirectory::read_item(const Item& item, const std::string& key) const {
  const std::string path = dir_ + "/" + item.file, where = path + " (\"" + key.substr(0, 200) + "\")";
  std::error_code error;
  const auto size = std::filesystem::file_size(path, error);
  require(!error, ErrorCode::IO, where + " is missing: " + error.message());
  require(static_cast<uint64_t>(item.offset) <= size && static_cast<uint64_t>(item.length) <= size - item.offset,
          ErrorCode::IO,
          where + ": bytes " + std::to_string(item.offset) + " to " + std::to_string(item.offset + item.length) +
              " lie past the file's end (" + std::to_string(size) + " bytes)");
  std::ifstream in(path, std::ios::binary);
  std::string bytes(static_cast<size_t>(item.length), '\0');
  in.seekg(item.offset);
  in.read(bytes.data(), item.length);
  require(in.good() || item.length == 0, ErrorCode::IO, where + ": unreadable");
  return bytes;
}

at::Tensor DcpDirectory::read_tensor(const std::string& key) const {
  auto it = tensors_.find(key);
  require(it != tensors_.end(), ErrorCode::IO, dir_ + "/.metadata holds no tensor \"" + key + "\"");
  const Tensor& t = it->second;
  at::Tensor out = at::empty(t.size, at::TensorOptions().dtype(t.dtype));
  for (const Chunk& chunk : t.chunks) {
    const std::string where = dir_ + "/" + chunk.item.file + " (\"" + key + "\")";
    const c10::IValue value = read_torch_save(read_item(chunk.item, key), where);
    require(value.isTensor(), ErrorCode::IO, where + " holds a " + value.tagKind() + ", not a tensor");
    const at::Tensor& part = value.toTensor();
    require(part.sizes() == at::IntArrayRef(chunk.sizes) && part.scalar_type() == t.dtype, ErrorCode::IO,
            where + ": a chunk of " + c10::toString(part.scalar_type()) + " " + c10::str(part.sizes()) +
                " where .metadata says " + c10::toString(t.dtype) + " " + c10::str(at::IntArrayRef(chunk.sizes)));
    at::Tensor box = out;
    for (size_t d = 0; d < chunk.sizes.size(); ++d)
      box = box.narrow(static_cast<int64_t>(d), chunk.offsets[d], chunk.sizes[d]);
    box.copy_(part);
  }
  return out;
}

c10::IValue DcpDirectory::read_object(const std::string& key) const {
  auto it = objects_.find(key);
  require(it != objects_.end(), ErrorCode::IO, dir_ + "/.metadata holds no item \"" + key + "\"");
  return read_torch_save(read_item(it->second, key), dir_ + "/" + it->second.file + " (\"" + key + "\")");
}

}  // namespace accel::detail
