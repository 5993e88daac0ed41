#include <ATen/ATen.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdio>
#include <fstream>
#include <unistd.h>

#include "accel/data.hpp"
#include "accel/error.hpp"
#include "data/idx.hpp"

namespace {

using ::testing::HasSubstr;

class IdxTest : public ::testing::Test {
 protected:
  std::string path(const std::string& name) { return dir_ + "/" + name; }
  void SetUp() override {
    char templ[] = "/tmp/accel-idx-XXXXXX";
    dir_ = mkdtemp(templ);
  }
  void TearDown() override { EXPECT_EQ(std::system(("rm -rf " + dir_).c_str()), 0); }

  void write_raw(const std::string& name, const std::vector<uint8_t>& bytes) {
    std::ofstream(path(name), std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  }
  void write_gz(const std::string& name, const std::vector<uint8_t>& bytes) {
    gzFile f = gzopen(path(name).c_str(), "wb");
    gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
    gzclose(f);
  }
  static std::vector<uint8_t> images(uint8_t count, std::vector<uint8_t> pixels) {
    std::vector<uint8_t> out{0, 0, 0x08, 3, 0, 0, 0, count, 0, 0, 0, 2, 0, 0, 0, 2};
    out.insert(out.end(), pixels.begin(), pixels.end());
    return out;
  }
  static std::vector<uint8_t> labels(std::vector<uint8_t> values) {
    std::vector<uint8_t> out{0, 0, 0x08, 1, 0, 0, 0, static_cast<uint8_t>(values.size())};
    out.insert(out.end(), values.begin(), values.end());
    return out;
  }
  std::string dir_;
};

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const accel::Error& e) {
    EXPECT_EQ(e.code(), accel::ErrorCode::IO);
    return e.what();
  }
  return "no error";
}

TEST_F(IdxTest, ReadsRawAndGzipAndNormalises) {
  write_raw("img", images(2, {0, 255, 51, 102, 255, 255, 0, 0}));
  write_gz("lbl.gz", labels({3, 7}));
  auto dataset = accel::load_idx_dataset(path("img"), path("lbl.gz"), 0.5, 0.5);
  ASSERT_EQ(dataset->size(), 2);
  at::Tensor x = dataset->fields()[0], y = dataset->fields()[1];
  EXPECT_EQ(x.sizes(), (std::vector<int64_t>{2, 1, 2, 2}));
  EXPECT_EQ(y.scalar_type(), at::kLong);
  EXPECT_EQ(y[1].item<int64_t>(), 7);
  EXPECT_NEAR(x[0][0][0][0].item<float>(), -1.0f, 1e-6);  // (0/255 - 0.5) / 0.5
  EXPECT_NEAR(x[0][0][0][1].item<float>(), 1.0f, 1e-6);
}

TEST_F(IdxTest, ReadsBigEndianInt32) {
  write_raw("ints", {0, 0, 0x0C, 1, 0, 0, 0, 2, 0, 0, 1, 0, 0xFF, 0xFF, 0xFF, 0xFE});
  at::Tensor t = accel::detail::read_idx(path("ints"));
  EXPECT_EQ(t[0].item<int32_t>(), 256);
  EXPECT_EQ(t[1].item<int32_t>(), -2);
}

TEST_F(IdxTest, BadFilesNameTheFileAndOffset) {
  write_raw("magic", {1, 2, 8, 1, 0, 0, 0, 1, 5});
  EXPECT_THAT(error_of([&] { accel::detail::read_idx(path("magic")); }),
              AllOf(HasSubstr(path("magic")), HasSubstr("bad magic number at byte 0")));
  write_raw("type", {0, 0, 0x42, 1, 0, 0, 0, 1, 5});
  EXPECT_THAT(error_of([&] { accel::detail::read_idx(path("type")); }), HasSubstr("type code 0x42"));
  auto truncated = images(2, {1, 2, 3, 4, 5});
  write_gz("short.gz", truncated);
  EXPECT_THAT(error_of([&] { accel::detail::read_idx(path("short.gz")); }),
              AllOf(HasSubstr("truncated at byte 21"), HasSubstr("the data")));
  auto extra = labels({1, 2});
  extra.push_back(9);
  write_raw("extra", extra);
  EXPECT_THAT(error_of([&] { accel::detail::read_idx(path("extra")); }), HasSubstr("extra bytes after the data, at byte 10"));
  EXPECT_THAT(error_of([&] { accel::detail::read_idx(path("missing")); }), HasSubstr("cannot be opened"));
  write_raw("img", images(2, {0, 0, 0, 0, 0, 0, 0, 0}));
  write_raw("lbl", labels({1, 2, 3}));
  EXPECT_THAT(error_of([&] { accel::load_idx_dataset(path("img"), path("lbl")); }),
              HasSubstr("holds 2 images but"));
}

}  // namespace
