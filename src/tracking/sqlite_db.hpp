// The SQLite stores trackers write (trackio's <project>.db, Aim's
// run_metadata.sqlite): statements with bound parameters, errors as
// accel::Error naming the tool and the file.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

struct sqlite3;

namespace accel::detail {

class SqliteDb {
 public:
  struct Blob {
    std::string bytes;
  };
  struct Null {};
  using Param = std::variant<std::string, int64_t, Blob, Null>;

  // Opens (creating) path; tool names the tracker in errors. Throws IO.
  SqliteDb(std::string path, std::string tool);
  ~SqliteDb();
  SqliteDb(const SqliteDb&) = delete;
  SqliteDb& operator=(const SqliteDb&) = delete;

  // Several statements, no parameters.
  void exec(const std::string& sql);
  // One statement with parameters ?1, ?2, ...
  void run(const char* sql, const std::vector<Param>& params);
  // The first column of the first row, if there is one.
  std::optional<int64_t> query_int(const char* sql, const std::vector<Param>& params = {});
  int64_t last_insert_id() const;
  const std::string& path() const { return path_; }

 private:
  void check(int rc, const char* what);

  std::string path_, tool_;
  sqlite3* db_ = nullptr;
};

}  // namespace accel::detail
