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
#include <utility>
#include <vector>

#include "core/file_io.hpp"

namespace accel::detail {

// The object stored, as IValues: dicts (OrderedDict included, in order),
// lists, tuples, None, bools, ints, floats, strings (Python's bytes too) and
// CPU tensors. Allowed globals: collections.OrderedDict,
// torch._utils._rebuild_tensor_v2 and _rebuild_parameter, torch.<Type>Storage,
// and torch.jit._pickle.restore_type_tag (LibTorch's pickler's type tag: the
// value is kept, the tag dropped). Throws IO naming label for a file
// that is not such an archive, a malformed pickle, or any other global (named).
//
// PickleVocabulary::RandomStates (random_states_{rank}.pkl) also accepts
// numpy.core.multiarray._reconstruct, numpy.ndarray, numpy.dtype and
// _codecs.encode, with which Python's pickle writes NumPy's generator state.
// They are inert: never called; what they would build reads as None, so a
// caller that needs a value there still refuses it by type.
//
// PickleVocabulary::Scheduler (scheduler.bin) also reads what torch 1.13's own
// OneCycleLR and MultiStepLR state dicts hold: collections.Counter as the dict
// it is built from, and the bound method anneal_func (builtins.getattr over
// the pickled OneCycleLR with its optimizer: torch.optim.lr_scheduler.OneCycleLR,
// torch.optim.<kind>.<Optimizer>, collections.defaultdict, builtins.dict) as
// inert, None, like NumPy's objects above: nothing is imported or called.
//
// PickleVocabulary::DcpMetadata (a distributed checkpoint's .metadata, read
// with read_pickle) also reads the dataclasses of
// torch.distributed.checkpoint.metadata (Metadata, TensorStorageMetadata,
// ChunkStorageMetadata, BytesStorageMetadata, TensorProperties, StorageMeta,
// MetadataIndex) and filesystem._StorageInfo, each as a dict of its fields with
// "__class__" naming it (TensorProperties: its state tuple under "__state__");
// torch.Size, torch.serialization._get_layout and _MEM_FORMAT_ENCODING as the
// value they wrap, pathlib.PosixPath as its parts joined, dtypes (torch.float32,
// ...) as their names, and MetadataIndex dict keys as dcp_chunk_key(fqn,
// offset). Nothing else: any other class is refused, unread.
//
// PickleVocabulary::TorchScriptModule (a TorchScript archive's data.pkl: the
// module's objects) also reads each __torch__.<path>.<Class> object as a dict
// of its attributes with "__class__" naming it (what a custom __getstate__
// returned under "__state__"). No code record of the archive is read.
enum class PickleVocabulary { StateDict, RandomStates, Scheduler, DcpMetadata, TorchScriptModule };
c10::IValue read_torch_save(const std::string& bytes, const std::string& label,
                            PickleVocabulary vocabulary = PickleVocabulary::StateDict);
// The same, from a file, never whole in memory: the archive's directory and
// data.pkl are read, then each storage
//   StorageReads::Copy  straight from the file into its tensor;
//   StorageReads::Map   as a read-only view of a private mapping of the file
//                       (copied when not aligned for its dtype), so that only
//                       the pages a caller touches are read; for callers that
//                       use a part of each tensor (a checkpoint cut again for
//                       another layout). The tensors must not be written, and
//                       a file shortened while they live is not supported.
// Errors name label (reading: the path).
enum class StorageReads { Copy, Map };
// For a tensor read with StorageReads::Map: gives back the resident pages of
// its storage, once a caller has taken what it needs from it (the tensor stays
// valid; touching it reads them again). Does nothing for any other tensor.
void release_mapped_pages(const at::Tensor& tensor);
// Whether the tensor's storage is such a view of a mapped file.
bool is_mapped_tensor(const at::Tensor& tensor);
c10::IValue read_torch_save_file(const std::string& path, const std::string& label,
                                 PickleVocabulary vocabulary = PickleVocabulary::StateDict,
                                 StorageReads reads = StorageReads::Copy);
// A plain pickle (pickle.dump's output, no archive and so no tensors), with
// the same machine and vocabularies.
c10::IValue read_pickle(const std::string& bytes, const std::string& label, PickleVocabulary vocabulary);
// "fqn@o1,o2": how a DCP .metadata's MetadataIndex keys read.
std::string dcp_chunk_key(const std::string& fqn, const std::vector<int64_t>& offsets);

// A state dict {name: tensor} for write_torch_save, as pytorch_model.bin
// holds it: tensors detached and on the CPU, so that torch.load works without
// a GPU and returns a dict nn.Module.load_state_dict takes.
c10::IValue tensor_dict(const std::vector<std::pair<std::string, at::Tensor>>& tensors);
// torch.save's archive of any value LibTorch's pickler writes (a state dict),
// streamed into sink: each storage goes from its tensor's memory (a GPU
// tensor's from a host copy of that tensor alone), never the whole archive in
// memory. Throws what the sink throws.
void write_torch_save(ByteSink& sink, const c10::IValue& value);

// Bytes as torch.save would write a Python bytes object (a zip archive whose
// data.pkl is one BINBYTES opcode, protocol 3), for custom_checkpoint_{i}.pkl:
// torch.load returns the bytes. read_torch_save reads them back as a string.
std::string pickle_bytes(const std::string& bytes);

// True for a zip archive (torch.save's format since PyTorch 1.6); the legacy
// non-zip format is not read.
bool is_zip_archive(const std::string& bytes);
// True for a file that is a zip archive with TorchScript code records (a
// LibTorch module archive, such as libaccel's optimizer files before format 2);
// reads only its directory. False for anything else, unreadable included.
bool is_torchscript_archive_file(const std::string& path);

// Refuses (IO, naming label) a zip archive with a compressed record or one
// larger than the archive, before LibTorch's reader allocates what a record
// declares (torch_archive.cpp). read_torch_save calls it.
void require_stored_records(const std::string& bytes, const std::string& label);

}  // namespace accel::detail
