#include "tracking/rocksdb_writer.hpp"

#include <dlfcn.h>

#include <mutex>
#include <type_traits>

#include "accel/error.hpp"

namespace accel::detail {
namespace {

// The functions of rocksdb/c.h used here, declared as that stable C API
// declares them (opaque handles as void*), so no RocksDB header is needed to
// build libaccel.
struct RocksDbApi {
  void* (*options_create)();
  void (*options_destroy)(void*);
  void (*options_set_create_if_missing)(void*, unsigned char);
  void (*options_set_compression)(void*, int);
  void* (*open)(const void* options, const char* name, char** errptr);
  void (*close)(void*);
  void* (*writeoptions_create)();
  void (*writeoptions_destroy)(void*);
  void* (*writebatch_create)();
  void (*writebatch_destroy)(void*);
  void (*writebatch_put)(void*, const char* key, size_t klen, const char* value, size_t vlen);
  void (*write)(void* db, const void* options, void* batch, char** errptr);
  void* (*flushoptions_create)();
  void (*flushoptions_destroy)(void*);
  void (*flush)(void* db, const void* options, char** errptr);
  void (*free)(void*);
};

constexpr int kNoCompression = 0;  // rocksdb_no_compression

// The loaded API, or the reason it is not there; loaded once per process.
const RocksDbApi* api(std::string* why) {
  static std::once_flag once;
  static RocksDbApi loaded{};
  static bool ok = false;
  static std::string error;
  std::call_once(once, [] {
    void* library = nullptr;
    for (const char* name : {"librocksdb.so.7.8", "librocksdb.so"}) {
      if ((library = dlopen(name, RTLD_NOW | RTLD_LOCAL)) != nullptr) break;
      error = dlerror();
    }
    if (library == nullptr) return;
    bool all = true;
    const auto bind = [&](auto& slot, const char* symbol) {
      void* found = dlsym(library, symbol);
      if (found == nullptr) {
        all = false;
        error = std::string("librocksdb has no ") + symbol;
      }
      slot = reinterpret_cast<std::remove_reference_t<decltype(slot)>>(found);
    };
    bind(loaded.options_create, "rocksdb_options_create");
    bind(loaded.options_destroy, "rocksdb_options_destroy");
    bind(loaded.options_set_create_if_missing, "rocksdb_options_set_create_if_missing");
    bind(loaded.options_set_compression, "rocksdb_options_set_compression");
    bind(loaded.open, "rocksdb_open");
    bind(loaded.close, "rocksdb_close");
    bind(loaded.writeoptions_create, "rocksdb_writeoptions_create");
    bind(loaded.writeoptions_destroy, "rocksdb_writeoptions_destroy");
    bind(loaded.writebatch_create, "rocksdb_writebatch_create");
    bind(loaded.writebatch_destroy, "rocksdb_writebatch_destroy");
    bind(loaded.writebatch_put, "rocksdb_writebatch_put");
    bind(loaded.write, "rocksdb_write");
    bind(loaded.flushoptions_create, "rocksdb_flushoptions_create");
    bind(loaded.flushoptions_destroy, "rocksdb_flushoptions_destroy");
    bind(loaded.flush, "rocksdb_flush");
    bind(loaded.free, "rocksdb_free");
    ok = all;
  });
  if (!ok && why != nullptr) *why = error;
  return ok ? &loaded : nullptr;
}

const RocksDbApi& require_api() {
  std::string why;
  const RocksDbApi* loaded = api(&why);
  require(loaded != nullptr, ErrorCode::Unsupported,
          "the aim tracker writes RocksDB, and librocksdb cannot be loaded (" + why +
              "); install it (Debian: apt install librocksdb7.8)");
  return *loaded;
}

// Takes a RocksDB error string (if any) and throws it, naming the database.
void check(char* error, const std::string& what, const std::string& path) {
  if (error == nullptr) return;
  const std::string message = error;
  require_api().free(error);
  fail(ErrorCode::IO, "RocksDB: cannot " + what + " \"" + path + "\": " + message);
}

}  // namespace

bool rocksdb_available() { return api(nullptr) != nullptr; }

void RocksDbWriter::require_library() { require_api(); }

RocksDbWriter::RocksDbWriter(const std::string& path) : path_(path) {
  const RocksDbApi& rocksdb = require_api();
  void* options = rocksdb.options_create();
  rocksdb.options_set_create_if_missing(options, 1);
  rocksdb.options_set_compression(options, kNoCompression);
  char* error = nullptr;
  db_ = rocksdb.open(options, path.c_str(), &error);
  rocksdb.options_destroy(options);
  check(error, "open", path);
  write_options_ = rocksdb.writeoptions_create();
}

RocksDbWriter::~RocksDbWriter() {
  const RocksDbApi* rocksdb = api(nullptr);
  if (rocksdb == nullptr || db_ == nullptr) return;
  void* flush_options = rocksdb->flushoptions_create();
  char* error = nullptr;
  rocksdb->flush(db_, flush_options, &error);  // a failed flush leaves the log, which a reader replays
  if (error != nullptr) rocksdb->free(error);
  rocksdb->flushoptions_destroy(flush_options);
  rocksdb->writeoptions_destroy(write_options_);
  rocksdb->close(db_);
}

void RocksDbWriter::write(const std::vector<std::pair<std::string, std::string>>& items) {
  const RocksDbApi& rocksdb = require_api();
  void* batch = rocksdb.writebatch_create();
  for (const auto& [key, value] : items)
    rocksdb.writebatch_put(batch, key.data(), key.size(), value.data(), value.size());
  char* error = nullptr;
  rocksdb.write(db_, write_options_, batch, &error);
  rocksdb.writebatch_destroy(batch);
  check(error, "write to", path_);
}

}  // namespace accel::detail
