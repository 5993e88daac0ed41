// Crash-safe checkpoint directories: files are written into a hidden partial
// directory next to the target, and the partial directory replaces the target
// in one rename once every file is durable, so a process killed at any moment
// leaves either the old checkpoint or the new one, never a mix.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/file_io.hpp"

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
// Size and XXH3-64 checksum (16 hex digits) of a file's bytes, as the manifest records them.
struct FileDigest {
  uint64_t bytes = 0;
  std::string xxh3;
};
FileDigest digest_of(const std::string& bytes);
// The same for a file on disk, read in chunks (never whole in memory).
FileDigest digest_file(const std::string& path);

// Writes bytes to dir/name durably (atomically, fsynced); returns their digest.
FileDigest write_durable(const std::string& dir, const std::string& name, const std::string& bytes);
// The same, streamed: `produce` writes the file's bytes into the sink (a file
// of tensors goes from their memory to the disk, never whole in memory).
FileDigest write_durable(const std::string& dir, const std::string& name,
                         const std::function<void(ByteSink&)>& produce);
// checkpoint_{N} entries of dir, sorted by N. Every one of them was committed
// whole: pruning renames a checkpoint out of this pattern before deleting it.
std::vector<std::pair<int64_t, std::string>> numbered_checkpoints(const std::string& dir);
// Deletes a checkpoint directory so that an interruption never leaves a
// half-deleted one under its name: renamed to ".<name>.removing" first.
// Best effort: a failure to delete the renamed tree is ignored.
void retire_directory(const std::string& dir);
// Removes what interrupted saves and prunes left in dir: the hidden
// ".<name>.partial" and ".<name>.removing" entries. Safe to call from several
// processes on one shared directory at once.
void remove_leftovers(const std::string& dir);

}  // namespace accel::detail
