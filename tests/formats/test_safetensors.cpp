// Our safetensors reader and writer: round trips, and a rejection with a
// message for each way a file can break the format.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>

#include "accel/checkpoint.hpp"
#include "accel/error.hpp"
#include "formats/safetensors.hpp"

namespace {

namespace st = accel::safetensors;

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const accel::Error& error) {
    return error.what();
  }
  return "no error";
}

// A file with the given JSON header and data bytes.
std::string file_with(const std::string& header, const std::string& data) {
  std::string out(8, '\0');
  uint64_t n = header.size();
  std::memcpy(&out[0], &n, 8);  // little-endian host
  return out + header + data;
}

std::string parse_error(const std::string& bytes) {
  return error_of([&] { st::File::parse(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), "t.st"); });
}

TEST(Safetensors, RoundTripKeepsTensorsAndMetadata) {
  std::string path = ::testing::TempDir() + "round.safetensors";
  accel::TensorDict tensors{{"b", at::arange(6, at::kFloat).view({2, 3})},
                            {"a", at::tensor({int64_t{1}, int64_t{-2}})},
                            {"h", at::ones({3}, at::kHalf)},
                            {"flag", at::tensor({1, 0, 1}).to(at::kBool)},
                            {"empty", at::empty({0, 4})}};
  accel::save_safetensors(path, tensors, {{"format", "pt"}});
  std::map<std::string, std::string> metadata;
  accel::TensorDict back = accel::load_safetensors(path, &metadata);
  EXPECT_EQ(metadata.at("format"), "pt");
  ASSERT_EQ(back.size(), tensors.size());
  for (auto& [name, t] : tensors) {
    auto it = std::find_if(back.begin(), back.end(), [&](auto& e) { return e.first == name; });
    ASSERT_NE(it, back.end()) << name;
    EXPECT_EQ(it->second.scalar_type(), t.scalar_type()) << name;
    EXPECT_TRUE(at::equal(it->second, t)) << name;
  }
}

TEST(Safetensors, EveryRejectionNamesTheProblem) {
  const std::string f32 = R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  const std::string eight(8, '\1');
  EXPECT_EQ(parse_error(file_with(f32, eight)), "no error");
  EXPECT_NE(parse_error("abc").find("shorter than the 8-byte header length"), std::string::npos);
  std::string huge(8, '\xff');
  EXPECT_NE(parse_error(huge).find("exceeds the limit"), std::string::npos);
  EXPECT_NE(parse_error(file_with(f32, eight).substr(0, 20)).find("runs past the end"), std::string::npos);
  EXPECT_NE(parse_error(file_with("{not json", "")).find("not valid JSON"), std::string::npos);
  EXPECT_NE(parse_error(file_with("[1,2]", "")).find("not a JSON object"), std::string::npos);
  EXPECT_NE(parse_error(file_with(R"({"x":{"dtype":"F33","shape":[2],"data_offsets":[0,8]}})", eight))
                .find("unknown dtype \"F33\""),
            std::string::npos);
  EXPECT_NE(parse_error(file_with(R"({"x":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", eight))
                .find("8 bytes for a F32 tensor of shape [3]"),
            std::string::npos);
  EXPECT_NE(parse_error(file_with(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,16]}})", eight))
                .find("do not lie within"),
            std::string::npos);
  EXPECT_NE(parse_error(file_with(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                                  R"("y":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                                  eight))
                .find("overlapping"),
            std::string::npos);
  EXPECT_NE(
      parse_error(file_with(R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", eight)).find("leaving a gap"),
      std::string::npos);
  EXPECT_NE(parse_error(file_with(f32, eight + "xx")).find("2 bytes after the last tensor"), std::string::npos);
  EXPECT_NE(parse_error(file_with(R"({"__metadata__":{"k":1}})", "")).find("__metadata__[\"k\"] is not a string"),
            std::string::npos);
  EXPECT_NE(
      parse_error(file_with(R"({"x":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", eight)).find("not a size"),
      std::string::npos);
  EXPECT_NE(parse_error(file_with(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8],"extra":1}})", eight))
                .find("unknown field \"extra\""),
            std::string::npos);
  EXPECT_NE(parse_error(file_with(R"({"x":{"dtype":"F32","shape":[4294967296,4294967296,4294967296],)"
                                  R"("data_offsets":[0,8]}})",
                                  eight))
                .find("bytes for a F32 tensor"),
            std::string::npos);
  EXPECT_NE(error_of([] { st::File::open("/nonexistent/x.safetensors"); }).find("/nonexistent/x.safetensors"),
            std::string::npos);
}

TEST(Safetensors, WriterRejectsWhatTheFormatCannotHold) {
  std::vector<st::TensorView> dup{{"a", "F32", {1}, "abcd", 4}, {"a", "F32", {1}, "abcd", 4}};
  EXPECT_NE(error_of([&] { st::serialize(dup); }).find("appears twice"), std::string::npos);
  std::vector<st::TensorView> wrong{{"a", "F32", {2}, "abcd", 4}};
  std::string message = error_of([&] { st::serialize(wrong); });
  EXPECT_NE(message.find("has 4 bytes, its shape needs 8"), std::string::npos) << message;
}

TEST(Safetensors, ParsesSizes) {
  EXPECT_EQ(accel::parse_size("5GB"), 5000000000);
  EXPECT_EQ(accel::parse_size("2MiB"), 2 << 20);
  EXPECT_EQ(accel::parse_size("123"), 123);
  EXPECT_EQ(accel::parse_size("10kb"), 1250);  // kilobits, as Accelerate reads it
  EXPECT_EQ(accel::parse_size("5Gb"), 625000000);
  EXPECT_EQ(accel::parse_size("1.5GB"), 1500000000);
  EXPECT_NE(error_of([] { accel::parse_size("99999999999TB"); }).find("too large"), std::string::npos);
  EXPECT_NE(error_of([] { accel::parse_size(".5GB"); }).find("does not start with a number"), std::string::npos);
  EXPECT_NE(error_of([] { accel::parse_size("5XB"); }).find("unknown unit \"XB\""), std::string::npos);
  EXPECT_NE(error_of([] { accel::parse_size("GB"); }).find("does not start with a number"), std::string::npos);
}

}  // namespace
