// What load_state reads a libaccel checkpoint through: its manifest, with
// every field's type checked, and the files the manifest lists, each checked
// against the recorded size and checksum and confined to the checkpoint's
// directory. Errors name the file and what is wrong.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <string>

namespace accel::detail {

// A parsed JSON file whose fields are read with their types checked; errors
// name the file, the field and what was found.
class JsonFile {
 public:
  JsonFile(std::string path, const std::string& text);
  bool has(const std::string& name) const { return json_.contains(name); }
  const nlohmann::json& field(const std::string& name) const;
  int64_t integer(const std::string& name) const;
  uint64_t count(const std::string& name) const;
  bool boolean(const std::string& name) const;
  std::string string(const std::string& name) const;
  const std::string& path() const { return path_; }

  // A short description of a value for messages: scalars as written, containers by kind.
  static std::string describe(const nlohmann::json& value);

 private:
  std::string path_;
  nlohmann::json json_;
};

// Refuses (IO) a file of checkpoint directory dir that is a symlink leading
// out of it: load_state would read (and a checksum vouch for) any file the
// process can. A symlink within the directory is harmless.
void require_inside_checkpoint(const std::string& dir, const std::string& path);

class CheckpointReader {
 public:
  // manifest's "files"; version: its format version (1: sizes only).
  CheckpointReader(std::string dir, const JsonFile& manifest, int version);

  std::string path(const std::string& name) const { return dir_ + "/" + name; }
  // The file's bytes, after checking them against the manifest.
  std::string bytes(const std::string& name) const;
  // Checks a file against the manifest without keeping it in memory.
  void verify(const std::string& name) const;

 private:
  struct Expected {
    uint64_t bytes = 0;
    std::string xxh3;  // empty in version-1 checkpoints
  };
  void check(const std::string& name, uint64_t bytes, const std::string& xxh3) const;
  void check_inside(const std::string& name) const;

  std::string dir_;
  std::map<std::string, Expected> expected_;
  bool checksummed_ = false;
};

}  // namespace accel::detail
