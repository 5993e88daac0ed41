// Checkpoint files written from the tensors' memory and read where they lie
// (src/core/file_io.hpp, src/formats/torch_archive.hpp, tensor_io.hpp): the
// streamed bytes are exactly what the in-memory writers produce, a failing
// write leaves nothing behind and never escapes as a crash, and a file read
// with pread or a mapping gives the values an in-memory read gives, refusing
// the same hostile files with the file's name.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/csrc/jit/serialization/pickle.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "accel/error.hpp"
#include "core/file_io.hpp"
#include "formats/safetensors.hpp"
#include "formats/tensor_io.hpp"
#include "formats/torch_pickle.hpp"

namespace accel::detail {
namespace {

namespace fs = std::filesystem;

std::string temp_path(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / "accel_streamed_files";
  fs::create_directories(dir);
  return (dir / name).string();
}

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_all(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

std::string archive_of(const c10::IValue& value) {
  StringSink out;
  write_torch_save(out, value);
  return out.bytes;
}

template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

// A state dict shaped as an optimizer's: tensors of several dtypes, a view
// into a larger storage, numbers.
c10::IValue sample_state() {
  c10::impl::GenericDict inner(c10::StringType::get(), c10::AnyType::get());
  inner.insert("exp_avg", at::arange(1000, at::kFloat));
  inner.insert("exp_avg_sq", at::arange(10, at::kDouble).reshape({2, 5}));
  inner.insert("step", int64_t{7});
  c10::impl::GenericDict state(c10::IntType::get(), c10::AnyType::get());
  state.insert(int64_t{0}, inner);
  c10::impl::GenericDict out(c10::StringType::get(), c10::AnyType::get());
  out.insert("state", state);
  out.insert("lr", 0.25);
  return out;
}

void expect_same_state(const c10::IValue& read, const c10::IValue& want) {
  const auto a = read.toGenericDict().at("state").toGenericDict().at(0).toGenericDict();
  const auto b = want.toGenericDict().at("state").toGenericDict().at(0).toGenericDict();
  EXPECT_TRUE(at::equal(a.at("exp_avg").toTensor(), b.at("exp_avg").toTensor()));
  EXPECT_TRUE(at::equal(a.at("exp_avg_sq").toTensor(), b.at("exp_avg_sq").toTensor()));
  EXPECT_EQ(a.at("step").toInt(), 7);
  EXPECT_EQ(read.toGenericDict().at("lr").toDouble(), 0.25);
}

class FailingSink final : public ByteSink {
 public:
  explicit FailingSink(size_t allowed) : allowed_(allowed) {}
  void write(const void*, size_t n) override {
    if (n > allowed_) fail(ErrorCode::IO, "disk full (test)");
    allowed_ -= n;
  }

 private:
  size_t allowed_;
};

TEST(StreamedFiles, TorchSaveStreamedIsTorchPickleSaveByteForByte) {
  const c10::IValue state = sample_state();
  StringSink streamed;
  write_torch_save(streamed, state);
  const std::vector<char> reference = torch::jit::pickle_save(state);
  EXPECT_EQ(streamed.bytes, std::string(reference.begin(), reference.end()));
}

TEST(StreamedFiles, SafetensorsStreamedIsTheInMemoryWriterAndTakesViews) {
  const at::Tensor matrix = at::arange(24, at::kFloat).reshape({4, 6});
  const std::vector<std::pair<std::string, at::Tensor>> tensors{
      {"b", at::arange(5, at::kLong)}, {"a", matrix}, {"t", matrix.t()}};  // t: not contiguous, copied while written
  StringSink streamed;
  write_tensors(streamed, tensors, {{"format", "pt"}});
  EXPECT_EQ(streamed.bytes, serialize_tensors(tensors, {{"format", "pt"}}));
  const std::string path = temp_path("streamed.safetensors");
  write_all(path, streamed.bytes);
  const safetensors::File file = safetensors::File::open(path);
  EXPECT_TRUE(at::equal(read_tensor(file, *file.find("t")), matrix.t().contiguous()));
}

TEST(StreamedFiles, SafetensorsInTheGivenOrderReadBackByOffsets) {
  const at::Tensor x = at::arange(6, at::kFloat), y = at::arange(3, at::kDouble);
  std::vector<safetensors::TensorView> views{{"z", "F32", {6}, x.data_ptr(), 24, {}},
                                             {"a", "F64", {3}, y.data_ptr(), 24, {}}};
  StringSink out;
  safetensors::write(out, views, {}, /*sort_by_name=*/false);
  // "z" comes first in the data: offset 0.
  EXPECT_NE(out.bytes.find("\"z\":{\"dtype\":\"F32\",\"shape\":[6],\"data_offsets\":[0,24]}"), std::string::npos);
  const std::string path = temp_path("ordered.safetensors");
  write_all(path, out.bytes);
  const safetensors::File file = safetensors::File::open(path);
  EXPECT_TRUE(at::equal(read_tensor(file, *file.find("z")), x));
  EXPECT_TRUE(at::equal(read_tensor(file, *file.find("a")), y));
}

TEST(StreamedFiles, AFailingSinkThrowsItsErrorAndAFailedFileLeavesNothing) {
  // LibTorch's zip writer never sees the exception (it would terminate from
  // its destructor): the first failure comes back once the archive is done.
  FailingSink sink(100);
  const std::string message = error_of([&] { write_torch_save(sink, sample_state()); });
  EXPECT_NE(message.find("disk full (test)"), std::string::npos) << message;

  const std::string path = temp_path("never.bin");
  fs::remove(path);
  {
    AtomicFileWriter file(path);
    file.write("partial", 7);
  }  // destroyed without commit: the temporary goes, nothing appears at path
  EXPECT_FALSE(fs::exists(path));
  for (const auto& entry : fs::directory_iterator(fs::path(path).parent_path())) {
    EXPECT_EQ(entry.path().filename().string().find("never.bin.tmp"), std::string::npos) << entry.path();
  }
  AtomicFileWriter file(path);
  file.write("whole", 5);
  file.commit();
  EXPECT_EQ(read_all(path), "whole");
  const std::string late = error_of([&] { file.write("x", 1); });
  EXPECT_NE(late.find("after it was committed"), std::string::npos) << late;
}

TEST(StreamedFiles, AFileReadsAsItsBytesDoCopiedOrMapped) {
  const c10::IValue state = sample_state();
  const std::string path = temp_path("state.bin");
  write_all(path, archive_of(state));
  expect_same_state(read_torch_save(read_all(path), "bytes"), state);
  expect_same_state(read_torch_save_file(path, "copied"), state);
  const c10::IValue mapped = read_torch_save_file(path, "mapped", PickleVocabulary::StateDict, StorageReads::Map);
  expect_same_state(mapped, state);
  // Its pages given back: the values are read again from the file when touched.
  const at::Tensor exp_avg =
      mapped.toGenericDict().at("state").toGenericDict().at(0).toGenericDict().at("exp_avg").toTensor();
  EXPECT_TRUE(is_mapped_tensor(exp_avg));
  EXPECT_FALSE(is_mapped_tensor(read_torch_save_file(path, "copied")
                                    .toGenericDict()
                                    .at("state")
                                    .toGenericDict()
                                    .at(0)
                                    .toGenericDict()
                                    .at("exp_avg")
                                    .toTensor()));
  release_mapped_pages(exp_avg);
  EXPECT_TRUE(at::equal(exp_avg, at::arange(1000, at::kFloat)));
  // Python's torch.save files (Accelerate's optimizer.bin) read the same way.
  EXPECT_FALSE(is_torchscript_archive_file(path));
}

TEST(StreamedFiles, HostileFilesAreRefusedNamingTheFile) {
  const std::string good = archive_of(sample_state());
  const std::string path = temp_path("hostile.bin");
  // Cut short: the end of central directory is gone.
  write_all(path, good.substr(0, good.size() / 2));
  std::string message = error_of([&] { read_torch_save_file(path, "load_state: " + path); });
  EXPECT_NE(message.find("load_state: " + path + ": not a readable torch.save archive"), std::string::npos) << message;
  // Not a zip archive at all.
  write_all(path, "not a pickle");
  message = error_of([&] { read_torch_save_file(path, "load_state: " + path); });
  EXPECT_NE(message.find("not a torch.save zip archive"), std::string::npos) << message;
  // A record whose size disagrees with its storage: the mapped reader falls
  // back to the archive's own read, which the storage check then refuses.
  std::string lying = good;
  // BININT2 1000: exp_avg's element count in its persistent id, the first 1000 pickled.
  const std::string numel = std::string("M\xe8\x03", 3);
  const size_t at = lying.find(numel);
  ASSERT_NE(at, std::string::npos);
  lying.replace(at, numel.size(), std::string("M\xe9\x03", 3));  // 1001
  write_all(path, lying);
  for (StorageReads reads : {StorageReads::Copy, StorageReads::Map}) {
    message = error_of([&] { read_torch_save_file(path, "lying", PickleVocabulary::StateDict, reads); });
    EXPECT_NE(message.find("has 4000 bytes, not 1001 elements"), std::string::npos) << message;
  }
  // A directory, a FIFO-like non-file: refused before anything is read.
  message = error_of([&] { read_torch_save_file(fs::path(path).parent_path().string(), "dir"); });
  EXPECT_NE(message.find("not a regular file"), std::string::npos) << message;
}

}  // namespace
}  // namespace accel::detail
