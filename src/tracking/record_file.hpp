// An append-only file written with one write(2) per record: the record is in
// the kernel when write returns, so a crash (even SIGKILL) loses at most the
// record being written.
#pragma once

#include <string>

namespace accel::detail {

class RecordFile {
 public:
  RecordFile() = default;
  // Creates parent directories; truncate=false appends. Throws IO naming path.
  void open(const std::string& path, bool truncate);
  void append(const std::string& record);
  void close();
  const std::string& path() const { return path_; }
  ~RecordFile() { close(); }
  RecordFile(const RecordFile&) = delete;
  RecordFile& operator=(const RecordFile&) = delete;

 private:
  int fd_ = -1;
  std::string path_;
};

// mkdir -p; throws IO naming the directory.
void make_dirs(const std::string& dir);
// Writes a whole small file (meta.yaml, params); throws IO naming path.
void write_file(const std::string& path, const std::string& content);

}  // namespace accel::detail
