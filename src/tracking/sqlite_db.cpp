#include "tracking/sqlite_db.hpp"

#include <sqlite3.h>

#include "accel/error.hpp"

namespace accel::detail {
namespace {

struct Statement {
  sqlite3_stmt* handle = nullptr;
  ~Statement() { sqlite3_finalize(handle); }
};

void bind(sqlite3_stmt* statement, const std::vector<SqliteDb::Param>& params) {
  for (size_t i = 0; i < params.size(); ++i) {
    const int index = static_cast<int>(i) + 1;
    if (const auto* integer = std::get_if<int64_t>(&params[i])) {
      sqlite3_bind_int64(statement, index, *integer);
    } else if (const auto* blob = std::get_if<SqliteDb::Blob>(&params[i])) {
      sqlite3_bind_blob(statement, index, blob->bytes.data(), static_cast<int>(blob->bytes.size()), SQLITE_TRANSIENT);
    } else if (const auto* text = std::get_if<std::string>(&params[i])) {
      sqlite3_bind_text(statement, index, text->data(), static_cast<int>(text->size()), SQLITE_TRANSIENT);
    } else {
      sqlite3_bind_null(statement, index);
    }
  }
}

}  // namespace

SqliteDb::SqliteDb(std::string path, std::string tool) : path_(std::move(path)), tool_(std::move(tool)) {
  const int rc = sqlite3_open_v2(path_.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
  if (rc != SQLITE_OK) {
    const std::string message = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
    sqlite3_close(db_);
    db_ = nullptr;
    fail(ErrorCode::IO, tool_ + ": cannot open '" + path_ + "': " + message);
  }
  sqlite3_busy_timeout(db_, 30000);
}

SqliteDb::~SqliteDb() { sqlite3_close(db_); }

void SqliteDb::exec(const std::string& sql) {
  char* error = nullptr;
  const int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &error);
  const std::string message = error ? error : "";
  sqlite3_free(error);
  require(rc == SQLITE_OK, ErrorCode::IO, tool_ + ": '" + path_ + "': " + message);
}

void SqliteDb::run(const char* sql, const std::vector<Param>& params) {
  Statement statement;
  check(sqlite3_prepare_v2(db_, sql, -1, &statement.handle, nullptr), "prepare");
  bind(statement.handle, params);
  const int rc = sqlite3_step(statement.handle);
  check(rc == SQLITE_DONE || rc == SQLITE_ROW ? SQLITE_OK : rc, "write");
}

std::optional<int64_t> SqliteDb::query_int(const char* sql, const std::vector<Param>& params) {
  Statement statement;
  check(sqlite3_prepare_v2(db_, sql, -1, &statement.handle, nullptr), "prepare");
  bind(statement.handle, params);
  const int rc = sqlite3_step(statement.handle);
  check(rc == SQLITE_ROW || rc == SQLITE_DONE ? SQLITE_OK : rc, "read");
  if (rc != SQLITE_ROW) return std::nullopt;
  return sqlite3_column_int64(statement.handle, 0);
}

int64_t SqliteDb::last_insert_id() const { return sqlite3_last_insert_rowid(db_); }

void SqliteDb::check(int rc, const char* what) {
  require(rc == SQLITE_OK, ErrorCode::IO, tool_ + ": cannot " + what + " '" + path_ + "': " + sqlite3_errmsg(db_));
}

}  // namespace accel::detail
