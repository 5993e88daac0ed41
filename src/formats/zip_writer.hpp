// A plain zip archive of stored (uncompressed) files, as Python's zipfile and
// every unzip read it: Comet's offline experiment archive (experiment.json and
// messages.json) is one. Not for torch.save archives, whose records LibTorch's
// own writer lays out (tensor_io.hpp).
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace accel::detail {

// The archive's bytes: each (name, contents) stored in order, CRC-32 from
// zlib, dated 1980-01-01 (zip's epoch; no reader needs the time). Throws
// InvalidArgument for a file or archive past zip's 4 GiB (no zip64 here).
std::string stored_zip(const std::vector<std::pair<std::string, std::string>>& files);

}  // namespace accel::detail
