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

using ::testing::AllOf;
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
  EXPECT_THAT(error_of([&] { accel::detail::read_idx(path("extra")); }),
              HasSubstr("extra bytes after the data, at byte 10"));
  EXPECT_THAT(error_of([&] { accel::detail::read_idx(path("missing")); }), HasSubstr("cannot be opened"));
  write_raw("img", images(2, {0, 0, 0, 0, 0, 0, 0, 0}));
  write_raw("lbl", labels({1, 2, 3}));
  EXPECT_THAT(error_of([&] { accel::load_idx_dataset(path("img"), path("lbl")); }), HasSubstr("holds 2 images but"));
}

// The header is checked against the file before anything is allocated: a
// 16-byte file claiming 2^31 images of 28x28 used to allocate 1.6 TB.
TEST_F(IdxTest, HeaderClaimsBeyondTheFileAreRefusedBeforeAllocating) {
  const std::vector<uint8_t> claim{0, 0, 0x08, 3, 0x80, 0, 0, 0, 0, 0, 0, 28, 0, 0, 0, 28, 1, 2, 3, 4};
  write_raw("huge", claim);
  EXPECT_THAT(error_of([&] { accel::detail::read_idx(path("huge")); }),
              AllOf(HasSubstr(path("huge")), HasSubstr("dimensions [2147483648, 28, 28] need 1683627180032 bytes"),
                    HasSubstr("only 4 follow the header at byte 16")));
  write_gz("huge.gz", claim);
  EXPECT_THAT(error_of([&] { accel::detail::read_idx(path("huge.gz")); }),
              AllOf(HasSubstr(path("huge.gz")), HasSubstr("need 1683627180032 bytes of data, more than a"),
                    HasSubstr("gzip file can hold")));
  // Raw and truncated, named before the read.
  write_raw("short", images(2, {1, 2, 3, 4, 5}));
  EXPECT_THAT(error_of([&] { accel::detail::read_idx(path("short")); }),
              HasSubstr("need 8 bytes of data but only 5 follow the header at byte 16"));
}

TEST_F(IdxTest, DimensionsWhoseProductOverflowsAreRefused) {
  // Five dimensions of 2^32 - 1: the element count overflowed int64 (UBSan).
  std::vector<uint8_t> header{0, 0, 0x08, 5};
  for (int d = 0; d < 5; ++d) header.insert(header.end(), {0xFF, 0xFF, 0xFF, 0xFF});
  write_raw("overflow", header);
  EXPECT_THAT(error_of([&] { accel::detail::read_idx(path("overflow")); }),
              AllOf(HasSubstr(path("overflow")), HasSubstr("dimension 1 (byte 8) is 4294967295"),
                    HasSubstr("more elements than fit in 64 bits")));
  // Elements that fit but bytes that do not: 2^31 * 2^31 doubles.
  write_raw("bytes", {0, 0, 0x0E, 2, 0x80, 0, 0, 0, 0x80, 0, 0, 0});
  EXPECT_THAT(error_of([&] { accel::detail::read_idx(path("bytes")); }),
              AllOf(HasSubstr("dimensions [2147483648, 2147483648] make 4611686018427387904 elements"),
                    HasSubstr("more bytes than fit in 64 bits")));
}

}  // namespace
