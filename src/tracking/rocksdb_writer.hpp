// Writing a RocksDB database through RocksDB's C API (rocksdb/c.h), loaded
// with dlopen when the aim tracker first needs it: only that tracker writes
// RocksDB, so libaccel does not link it and a system without it (Debian:
// librocksdb7.8) loses that tracker only.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace accel::detail {

// Whether librocksdb can be loaded here (what log_with "all" asks before
// including the aim tracker).
bool rocksdb_available();

class RocksDbWriter {
 public:
  // Opens the database at path, creating it (no compression: a reader built
  // without a codec still reads it). Throws Unsupported when librocksdb cannot
  // be loaded (naming the library), IO naming the path when it cannot open.
  explicit RocksDbWriter(const std::string& path);
  ~RocksDbWriter();  // flushes the memtable into a table file, then closes
  RocksDbWriter(const RocksDbWriter&) = delete;
  RocksDbWriter& operator=(const RocksDbWriter&) = delete;

  // Throws Unsupported naming librocksdb when it cannot be loaded.
  static void require_library();

  // Puts the pairs in one atomic batch. Throws IO naming the path.
  void write(const std::vector<std::pair<std::string, std::string>>& items);

 private:
  std::string path_;
  void* db_ = nullptr;
  void* write_options_ = nullptr;
};

}  // namespace accel::detail
