// Reading and writing whole files safely: inputs must be regular files (a FIFO
// or a device would block or never end), and outputs appear atomically under a
// temporary name no one else can have planted. Plain C++ (no LibTorch), so the
// fuzz targets can link it.
#pragma once

#include <string>

namespace accel::detail {

// Opens path for reading and checks that it is a regular file, without
// blocking on a FIFO (O_NONBLOCK until the check). Returns the descriptor (the
// caller closes it). Throws accel::Error (IO) naming the path: missing,
// unreadable, or not a regular file (saying what it is).
int open_regular_file(const std::string& path);

// The whole content of a regular file (open_regular_file's checks).
std::string read_regular_file(const std::string& path);

// Writes bytes to path durably and atomically: into a fresh temporary in the
// same directory created with O_EXCL (a planted file or symlink there is never
// followed or overwritten), fsync, rename over path. The temporary is removed
// if anything fails. Mode 0666 less the umask, like a plain open. Throws IO
// naming the path.
void write_file_atomically(const std::string& path, const std::string& bytes);

}  // namespace accel::detail
