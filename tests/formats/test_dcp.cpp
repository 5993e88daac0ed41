// PyTorch's distributed checkpoint read (src/formats/dcp.hpp): a model that
// PyTorch 2.15's FSDP saved from 2 processes (files/dcp_fsdp2, written by
// tests/dist/fsdp_dcp.py: pytorch_model_fsdp_0/ and the whole model at the
// save) reads back bitwise; hostile copies of it are refused naming the file,
// the key or the value, with nothing read past what was checked.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>

#include "accel/error.hpp"
#include "core/remove_tree.hpp"
#include "accelerator/load_dcp_state.hpp"
#include "formats/dcp.hpp"
#include "formats/dcp_writer.hpp"
#include "formats/safetensors.hpp"
#include "formats/tensor_io.hpp"

namespace accel::detail {
namespace {

namespace fs = std::filesystem;

const std::string kFixture = std::string(ACCEL_TEST_FILES) + "/formats/files/dcp_fsdp2";

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}
void write_all(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

// A fresh copy of the fixture's model directory.
std::string copy_of_fixture(const std::string& name) {
  const std::string dir = (fs::temp_directory_path() / ("accel_dcp_" + name)).string();
  accel::detail::remove_tree(dir);  // not fs::remove_all (docs/gpu.md)
  fs::copy(kFixture + "/pytorch_model_fsdp_0", dir);
  return dir;
}

// Replaces `from` (which must occur) by `to` of the same length in a file.
void replace_in(const std::string& path, const std::string& from, const std::string& to) {
  ASSERT_EQ(from.size(), to.size());
  std::string bytes = read_all(path);
  const size_t at = bytes.find(from);
  ASSERT_NE(at, std::string::npos) << from;
  bytes.replace(at, from.size(), to);
  write_all(path, bytes);
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::IO) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

TEST(Dcp, PyTorchsFsdpCheckpointReadsBitwise) {
  const DcpDirectory dcp = DcpDirectory::open(kFixture + "/pytorch_model_fsdp_0");
  const safetensors::File reference = safetensors::File::open(kFixture + "/model_at_save.safetensors");
  ASSERT_EQ(dcp.tensors().size(), reference.entries().size());
  for (const safetensors::Entry& entry : reference.entries()) {
    const std::string key = "model." + entry.name;
    ASSERT_EQ(dcp.tensors().count(key), 1u) << key;
    // FSDP2 shards dim 0 between the 2 processes: two chunks each.
    EXPECT_EQ(dcp.tensors().at(key).chunks.size(), 2u) << key;
    const at::Tensor read = dcp.read_tensor(key), want = read_tensor(reference, entry);
    EXPECT_EQ(read.scalar_type(), at::kDouble);
    EXPECT_TRUE(at::equal(read, want)) << key;
  }
}

TEST(Dcp, AModelOfAnotherShapeIsRefusedNamingTheTensor) {
  NamedTensors state_dict{{"0.weight", at::zeros({8, 6}, at::kDouble)}, {"0.bias", at::zeros({8}, at::kDouble)},
                          {"2.weight", at::zeros({8, 8}, at::kDouble)}, {"2.bias", at::zeros({8}, at::kDouble)},
                          {"4.weight", at::zeros({4, 8}, at::kDouble)}, {"4.bias", at::zeros({3}, at::kDouble)}};
  const std::string message = error_of([&] { dcp_model_values(kFixture + "/pytorch_model_fsdp_0", state_dict); });
  EXPECT_NE(message.find("pytorch_model_fsdp_0: \"model.4.weight\" has shape [3, 8], the model's has [4, 8]"),
            std::string::npos)
      << message;
  state_dict.pop_back();  // the model lacks 4.bias: the checkpoint holds a tensor it cannot place
  state_dict.back().second = at::zeros({3, 8}, at::kDouble);
  const std::string extra = error_of([&] { dcp_model_values(kFixture + "/pytorch_model_fsdp_0", state_dict); });
  EXPECT_NE(extra.find("holds \"model.4.bias\", which the model lacks"), std::string::npos) << extra;
}

TEST(Dcp, HostileDirectoriesAreRefusedNamingWhatIsWrong) {
  // A class outside DCP's vocabulary: refused unread (it could run code).
  std::string dir = copy_of_fixture("global");
  replace_in(dir + "/.metadata", "_StorageInfo", "os_system___");
  std::string message = error_of([&] { DcpDirectory::open(dir); });
  EXPECT_NE(message.find("names the global torch.distributed.checkpoint.filesystem.os_system___"), std::string::npos)
      << message;
  // A file name leading out of the directory.
  dir = copy_of_fixture("escape");
  replace_in(dir + "/.metadata", "__0_0.distcp", "../0_0.distc");
  message = error_of([&] { DcpDirectory::open(dir); });
  EXPECT_NE(message.find("names the file \"../0_0.distc\", which is not in the directory"), std::string::npos)
      << message;
  // A missing .distcp file, and one cut short: the item lies past its end.
  dir = copy_of_fixture("missing");
  fs::remove(dir + "/__1_0.distcp");
  const DcpDirectory missing = DcpDirectory::open(dir);
  message = error_of([&] { missing.read_tensor("model.0.weight"); });
  EXPECT_NE(message.find("__1_0.distcp (\"model.0.weight\") is missing"), std::string::npos) << message;
  dir = copy_of_fixture("short");
  const std::string data = read_all(dir + "/__0_0.distcp");
  write_all(dir + "/__0_0.distcp", data.substr(0, data.size() / 2));
  const DcpDirectory cut = DcpDirectory::open(dir);
  message = error_of([&] {
    for (const auto& [key, t] : cut.tensors()) cut.read_tensor(key);
  });
  EXPECT_NE(message.find("lie past the file's end (" + std::to_string(data.size() / 2) + " bytes)"), std::string::npos)
      << message;
  // A .metadata cut short.
  dir = copy_of_fixture("truncated");
  const std::string metadata = read_all(dir + "/.metadata");
  write_all(dir + "/.metadata", metadata.substr(0, metadata.size() / 3));
  message = error_of([&] { DcpDirectory::open(dir); });
  EXPECT_NE(message.find(dir + "/.metadata"), std::string::npos) << message;
}

// Every flat range of every shape: disjoint boxes, in order, each a contiguous
// run of the range, together exactly the range.
TEST(Dcp, FlatRangesBecomeBoxesThatCoverThemExactly) {
  for (const std::vector<int64_t>& shape :
       std::vector<std::vector<int64_t>>{{}, {7}, {3, 4}, {2, 3, 4}, {2, 1, 3, 2}, {5, 0}}) {
    int64_t numel = 1;
    for (int64_t d : shape) numel *= d;
    const at::Tensor index = at::arange(numel, at::kLong).reshape(shape);
    for (int64_t begin = 0; begin <= numel; ++begin) {
      for (int64_t end = begin; end <= numel; ++end) {
        int64_t next = begin;
        for (const DcpBox& box : flat_range_boxes(shape, begin, end)) {
          at::Tensor values = index;
          for (size_t d = 0; d < shape.size(); ++d) {
            values = values.narrow(static_cast<int64_t>(d), box.offsets[d], box.sizes[d]);
          }
          ASSERT_EQ(box.begin, next) << c10::str(at::IntArrayRef(shape)) << " [" << begin << ", " << end << ")";
          ASSERT_TRUE(at::equal(values.reshape({-1}), at::arange(box.begin, box.begin + box.numel, at::kLong)));
          next += box.numel;
        }
        ASSERT_EQ(next, end) << c10::str(at::IntArrayRef(shape)) << " [" << begin << ", " << end << ")";
      }
    }
  }
}

// What the writer writes, the reader reads: chunks from two "processes", one
// item of plain data, a 0-d tensor.
TEST(Dcp, WrittenDirectoriesReadBack) {
  const std::string dir = (fs::temp_directory_path() / "accel_dcp_written").string();
  accel::detail::remove_tree(dir);  // not fs::remove_all (docs/gpu.md)
  fs::create_directories(dir);
  const at::Tensor weight = at::randn({3, 5}, at::kDouble), step = at::scalar_tensor(4.0, at::kFloat);
  std::vector<nlohmann::json> records;
  for (int rank = 0; rank < 2; ++rank) {
    DcpFileWriter file("__" + std::to_string(rank) + "_0.distcp");
    const int64_t begin = rank == 0 ? 0 : 7, end = rank == 0 ? 7 : 15;  // a cut inside row 1
    for (const DcpBox& box : flat_range_boxes({3, 5}, begin, end)) {
      file.add_chunk("model.w", {std::string("model"), std::string("w")}, {3, 5}, box.offsets,
                     weight.reshape({-1}).narrow(0, box.begin, box.numel).view(box.sizes));
    }
    if (rank == 0) {
      file.add_chunk("optimizer.state.w.step",
                     {std::string("optimizer"), std::string("state"), std::string("w"), std::string("step")}, {}, {},
                     step);
      file.add_object("optimizer.param_groups.0.lr",
                      {std::string("optimizer"), std::string("param_groups"), int64_t{0}, std::string("lr")}, 0.25);
    }
    StringSink bytes;
    file.write(bytes);
    write_all(dir + "/" + file.file(), bytes.bytes);
    records.push_back(file.records());
  }
  write_all(dir + "/.metadata", dcp_metadata(records));
  const DcpDirectory dcp = DcpDirectory::open(dir);
  EXPECT_EQ(dcp.tensors().at("model.w").chunks.size(), 4u);  // rows 0, 1[:2] | 1[2:], 2
  EXPECT_TRUE(at::equal(dcp.read_tensor("model.w"), weight));
  EXPECT_TRUE(at::equal(dcp.read_tensor("optimizer.state.w.step"), step));
  EXPECT_EQ(dcp.read_object("optimizer.param_groups.0.lr").toDouble(), 0.25);
}

}  // namespace
}  // namespace accel::detail
