// Crash-safe checkpoint directories: files are written into a hidden partial
// directory next to the target, and the partial directory replaces the target
// in one rename once every file is durable, so a process killed at any moment
// leaves either the old checkpoint or the new one, never a mix.
#pragma once

#include <string>
#include <vector>

namespace accel::detail {

// ".<name>.partial" beside dir.
std::string partial_dir_for(const std::string& dir);
// Removes what is at path (file or tree), then creates the empty directory path.
void recreate_directory(const std::string& path);
// Makes partial the new dir atomically (exchanging with an existing dir, which
// is then removed) and makes the rename durable.
void commit_directory(const std::string& partial, const std::string& dir);
// fsync of a directory (so renames and new entries in it survive a crash).
void sync_directory(const std::string& dir);
// Writes bytes to dir/name and fsyncs the file.
void write_durable(const std::string& dir, const std::string& name, const std::string& bytes);
std::string read_file(const std::string& path);
// checkpoint_{N} entries of dir, sorted by N.
std::vector<std::pair<int64_t, std::string>> numbered_checkpoints(const std::string& dir);

}  // namespace accel::detail
