// Reading what Python's torch.save wrote (Accelerate's optimizer.bin, Hugging
// Face's pytorch_model.bin): a zip archive holding data.pkl and the tensors'
// storages as data/<key> records. LibTorch 1.13's own unpickler cannot read
// these (no SETITEM opcode, and it turns every OrderedDict — the type of a
// model's state dict — into None), and no packaged C or C++ library reads
// pickles, so this is a small pickle machine that knows only the opcodes and
// the globals a state dict uses. It never runs code: a pickle naming any
// other global is refused before anything of it is used.
#pragma once

#include <ATen/core/ivalue.h>

#include <string>

namespace accel::detail {

// The object stored, as IValues: dicts (OrderedDict included, in order),
// lists, tuples, None, bools, ints, floats, strings and CPU tensors. Allowed
// globals: collections.OrderedDict, torch._utils._rebuild_tensor_v2 and
// _rebuild_parameter, torch.<Type>Storage. Throws IO naming label for a file
// that is not such an archive, a malformed pickle, or any other global (named).
c10::IValue read_torch_save(const std::string& bytes, const std::string& label);

// True for a zip archive (torch.save's format since PyTorch 1.6); the legacy
// non-zip format is not read.
bool is_zip_archive(const std::string& bytes);

}  // namespace accel::detail
