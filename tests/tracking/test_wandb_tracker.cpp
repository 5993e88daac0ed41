// The wandb tracker's transaction log read back here at the framing level
// (blocks, fragments, checksums, as LevelDB's log reader checks them); the
// records themselves are read by wandb's own tool in test_tracker_readers.py.
#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "accel/accelerator.hpp"
#include "core/remove_tree.hpp"
#include "tracking/wandb_log.hpp"

namespace {

namespace fs = std::filesystem;

std::string read_all(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

uint64_t le(const std::string& bytes, size_t at, int n) {
  uint64_t value = 0;
  for (int i = n - 1; i >= 0; --i) value = (value << 8) | static_cast<unsigned char>(bytes[at + i]);
  return value;
}

// A LevelDB log reader with the W&B header: every fragment's checksum and type
// sequence is checked, and zero padding is allowed only where a header no longer fits.
std::vector<std::string> read_records(const std::string& file) {
  EXPECT_EQ(file.substr(0, 7), std::string(":W&B\xE1\xBE\x00", 7));
  std::vector<std::string> records;
  std::string pending;
  bool in_record = false;  // not pending.empty(): a FIRST fragment may carry no data
  size_t pos = 7;
  while (pos < file.size()) {
    const size_t left_in_block = 32768 - pos % 32768;
    if (left_in_block < 7) {
      EXPECT_EQ(file.substr(pos, left_in_block), std::string(left_in_block, '\0'));
      pos += left_in_block;
      continue;
    }
    const uint32_t crc = static_cast<uint32_t>(le(file, pos, 4));
    const size_t length = le(file, pos + 4, 2);
    const unsigned char type = static_cast<unsigned char>(file[pos + 6]);
    EXPECT_LE(7 + length, left_in_block) << "a fragment crosses a block boundary at " << pos;
    const std::string data = file.substr(pos + 7, length);
    uLong expected = crc32(0L, &type, 1);
    expected = crc32(expected, reinterpret_cast<const Bytef*>(data.data()), static_cast<uInt>(data.size()));
    EXPECT_EQ(crc, expected) << "bad checksum at " << pos;
    EXPECT_TRUE(type >= 1 && type <= 4) << int(type);
    EXPECT_EQ(type == 1 || type == 2, !in_record) << "fragment type " << int(type) << " out of order at " << pos;
    pending += data;
    in_record = type == 2 || type == 3;
    if (type == 1 || type == 4) records.push_back(std::move(pending)), pending.clear();
    pos += 7 + length;
  }
  EXPECT_FALSE(in_record);
  return records;
}

TEST(WandbLog, SplitsRecordsAtBlockBoundariesAsLevelDbDoes) {
  const fs::path path = fs::temp_directory_path() / ("accel_wandb_log_" + std::to_string(::getpid()) + ".wandb");
  std::vector<std::string> written;
  {
    accel::detail::WandbLogWriter log;
    log.open(path.string());
    // Sizes that leave 0..6 bytes at a block's end (zero padding), a record of
    // exactly one block's payload, and ones spanning three blocks.
    for (size_t size : {32754, 3, 32761 - 14, 1, 0, 70000, 32761, 5, 100000}) {
      std::string record(size, '\0');
      for (size_t i = 0; i < size; ++i) record[i] = static_cast<char>((i * 7 + size) & 0xFF);
      log.append(record);
      written.push_back(record);
    }
    log.close();
  }
  EXPECT_EQ(read_records(read_all(path)), written);
  fs::remove(path);
}

// Exactly a header's room left in a block: LevelDB (and wandb) write an empty
// FIRST fragment there and carry the whole record into the next block.
TEST(WandbLog, WritesAnEmptyFirstFragmentWhereOnlyAHeaderFits) {
  const fs::path path =
      fs::temp_directory_path() / ("accel_wandb_empty_first_" + std::to_string(::getpid()) + ".wandb");
  const std::vector<std::string> written = {std::string(32768 - 7 - 7 - 7, 'a'), std::string(10, 'b')};
  {
    accel::detail::WandbLogWriter log;
    log.open(path.string());
    for (const auto& record : written) log.append(record);
    log.close();
  }
  const std::string file = read_all(path);
  EXPECT_EQ(file.size(), 32768u + 7 + 10);
  EXPECT_EQ(le(file, 32761 + 4, 2), 0u);                      // empty...
  EXPECT_EQ(static_cast<unsigned char>(file[32761 + 6]), 2);  // ...FIRST
  EXPECT_EQ(read_records(file), written);
  fs::remove(path);
}

TEST(WandbTracker, WritesAnOfflineRunDirectoryUnderLoggingDir) {
  const fs::path dir = fs::temp_directory_path() / ("accel_wandb_" + std::to_string(::getpid()));
  accel::detail::remove_tree(dir);
  accel::AcceleratorOptions options;
  options.cpu = true;
  options.log_with = {"wandb"};
  options.project.logging_dir = dir.string();
  accel::Accelerator accelerator(options);
  accelerator.init_trackers("proj", {{"lr", 0.01}}, R"({"wandb": {"id": "abc123", "tags": ["t1", "t2"]}})");
  for (int step = 0; step < 400; ++step) accelerator.log({{"loss", 1.0 / (step + 1)}}, step);
  accelerator.end_training();
  std::vector<fs::path> runs;
  for (const auto& entry : fs::directory_iterator(dir / "wandb"))
    if (entry.path().filename().string().rfind("offline-run-", 0) == 0) runs.push_back(entry.path());
  ASSERT_EQ(runs.size(), 1u);
  const std::string name = runs[0].filename().string();
  EXPECT_EQ(name.substr(name.size() - 7), "-abc123");
  EXPECT_TRUE(fs::is_symlink(dir / "wandb" / "latest-run"));
  const auto records = read_records(read_all(runs[0] / "run-abc123.wandb"));
  // header, run, 400 history rows, summary, exit
  EXPECT_EQ(records.size(), 404u);
  EXPECT_NE(records[1].find("proj"), std::string::npos);
  EXPECT_NE(records[1].find("t2"), std::string::npos);
  accel::detail::remove_tree(dir);
}

TEST(WandbTracker, BadInitKwargsAreNamedAndStartNothing) {
  const fs::path dir = fs::temp_directory_path() / ("accel_wandb_bad_" + std::to_string(::getpid()));
  accel::detail::remove_tree(dir);
  accel::AcceleratorOptions options;
  options.cpu = true;
  options.log_with = {"wandb", "jsonl"};
  options.project.logging_dir = dir.string();
  accel::Accelerator accelerator(options);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"wandb": {"project_name": "x"}})", "'project_name'"},
      {R"({"wandb": {"tags": [1]}})", "[\"tags\"]"},
      {R"({"wandb": {"id": "../up"}})", "'../up'"},
      {R"({"wandb": {"mode": "shared"}})", "'shared'"},
      {R"({"clearml": {}})", "'clearml'"},
      {R"({"jsonl": {"flush": true}})", "'flush'"},
      {R"([1])", "not a JSON object"},
  };
  for (const auto& [kwargs, named] : cases) {
    try {
      accelerator.init_trackers("proj", {}, kwargs);
      FAIL() << kwargs;
    } catch (const accel::Error& e) {
      EXPECT_EQ(e.code(), accel::ErrorCode::InvalidArgument) << kwargs;
      EXPECT_NE(std::string(e.what()).find(named), std::string::npos) << e.what();
    }
  }
  EXPECT_FALSE(fs::exists(dir / "wandb"));
  // A tracker missing from log_with ignores its entry, as Accelerate does; then the run starts.
  accelerator.init_trackers("proj", {}, R"({"dvclive": {"dir": "x"}, "wandb": {"mode": "disabled"}})");
  accelerator.log({{"loss", 1.0}}, 0);
  accelerator.end_training();
  EXPECT_FALSE(fs::exists(dir / "wandb"));  // disabled: no files, as wandb's mode="disabled"
  EXPECT_FALSE(fs::exists("x"));
  EXPECT_TRUE(fs::exists(dir / "proj" / "metrics.jsonl"));
  accel::detail::remove_tree(dir);
}

}  // namespace
