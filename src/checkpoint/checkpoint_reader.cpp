#include "checkpoint/checkpoint_reader.hpp"

#include <filesystem>

#include "accel/error.hpp"
#include "checkpoint/checkpoint_dir.hpp"
#include "core/file_io.hpp"
#include "core/json.hpp"

namespace fs = std::filesystem;

namespace accel::detail {

JsonFile::JsonFile(std::string path, const std::string& text) : path_(std::move(path)) {
  json_ = parse_json(text, "load_state: " + path_, ErrorCode::IO);
  require(json_.is_object(), ErrorCode::IO, "load_state: " + path_ + " is not a JSON object");
}

const nlohmann::json& JsonFile::field(const std::string& name) const {
  require(json_.contains(name), ErrorCode::IO, "load_state: " + path_ + " lacks the field \"" + name + "\"");
  return json_[name];
}

int64_t JsonFile::integer(const std::string& name) const {
  const nlohmann::json& value = field(name);
  require(value.is_number_integer(), ErrorCode::IO,
          "load_state: " + path_ + ": \"" + name + "\" is " + describe(value) + ", not an integer");
  return value.get<int64_t>();
}

uint64_t JsonFile::count(const std::string& name) const {
  const nlohmann::json& value = field(name);
  require(value.is_number_unsigned(), ErrorCode::IO,
          "load_state: " + path_ + ": \"" + name + "\" is " + describe(value) + ", not a count");
  return value.get<uint64_t>();
}

bool JsonFile::boolean(const std::string& name) const {
  const nlohmann::json& value = field(name);
  require(value.is_boolean(), ErrorCode::IO,
          "load_state: " + path_ + ": \"" + name + "\" is " + describe(value) + ", not true or false");
  return value.get<bool>();
}

std::string JsonFile::string(const std::string& name) const {
  const nlohmann::json& value = field(name);
  require(value.is_string(), ErrorCode::IO,
          "load_state: " + path_ + ": \"" + name + "\" is " + describe(value) + ", not a string");
  return value.get<std::string>();
}

std::string JsonFile::describe(const nlohmann::json& value) {
  if (value.is_object()) return "an object";
  if (value.is_array()) return "an array";
  return describe_json(value, 40);
}

namespace {

// XXH3-64 as the manifest records it: 16 lowercase hex digits.
bool is_xxh3(const std::string& text) {
  if (text.size() != 16) return false;
  for (char c : text) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

}  // namespace

CheckpointReader::CheckpointReader(std::string dir, const JsonFile& manifest, int version) : dir_(std::move(dir)) {
  const nlohmann::json& files = manifest.field("files");
  require(files.is_object(), ErrorCode::IO, "load_state: " + manifest.path() + ": \"files\" is not an object");
  for (auto it = files.begin(); it != files.end(); ++it) {
    const nlohmann::json& entry = it.value();
    const std::string where = "load_state: " + manifest.path() + ": files[\"" + it.key() + "\"]";
    Expected expected;
    if (version == 1 && entry.is_number_unsigned()) {
      expected.bytes = entry.get<uint64_t>();
    } else {
      require(entry.is_object() && entry.contains("bytes") && entry["bytes"].is_number_unsigned() &&
                  entry.contains("xxh3") && entry["xxh3"].is_string(),
              ErrorCode::IO, where + " is not {\"bytes\": N, \"xxh3\": \"...\"}");
      expected.bytes = entry["bytes"].get<uint64_t>();
      expected.xxh3 = entry["xxh3"].get<std::string>();
      // An empty checksum used to skip the comparison: a file rewritten with
      // its size kept would pass as the one saved.
      require(
          is_xxh3(expected.xxh3), ErrorCode::IO,
          where + ": \"xxh3\" is " + JsonFile::describe(entry["xxh3"]) + ", not an XXH3-64 checksum (16 hex digits)");
    }
    expected_[it.key()] = expected;
  }
  checksummed_ = version >= 2;
}

std::string CheckpointReader::bytes(const std::string& name) const {
  check_inside(name);
  std::string content = read_regular_file(path(name));
  const FileDigest digest = digest_of(content);
  check(name, digest.bytes, digest.xxh3);
  return content;
}

void CheckpointReader::verify(const std::string& name) const {
  check_inside(name);
  const FileDigest digest = digest_file(path(name));
  check(name, digest.bytes, digest.xxh3);
}

void require_inside_checkpoint(const std::string& dir, const std::string& path) {
  // As for shard indexes (model_weights.cpp), the real file must lie in the
  // checkpoint's own directory.
  std::error_code error;
  if (!fs::is_symlink(path, error)) return;
  const fs::path real = fs::canonical(path, error);
  require(!error, ErrorCode::IO, "load_state: cannot open " + path + ": " + error.message());
  const fs::path real_dir = fs::canonical(dir, error);
  require(!error && real.parent_path() == real_dir, ErrorCode::IO,
          "load_state: " + path + " is a symlink leading outside the checkpoint directory (to " + real.string() +
              "); refusing to read it");
}

void CheckpointReader::check_inside(const std::string& name) const { require_inside_checkpoint(dir_, path(name)); }

void CheckpointReader::check(const std::string& name, uint64_t bytes, const std::string& xxh3) const {
  auto it = expected_.find(name);
  if (it == expected_.end()) {
    // Version 1 listed only the main process's files.
    require(!checksummed_, ErrorCode::IO,
            "load_state: " + path(name) + " is not listed in the manifest (a file added after the save)");
    return;
  }
  require(bytes == it->second.bytes, ErrorCode::IO,
          "load_state: " + path(name) + " has " + std::to_string(bytes) + " bytes, the manifest says " +
              std::to_string(it->second.bytes) + " (a truncated or replaced file)");
  require(it->second.xxh3.empty() || xxh3 == it->second.xxh3, ErrorCode::IO,
          "load_state: " + path(name) + " is corrupt: its XXH3 checksum is " + xxh3 + ", the manifest says " +
              it->second.xxh3);
}

}  // namespace accel::detail
