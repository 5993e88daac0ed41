// CSV and callback datasets: contents, collation and the errors bad data gets.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <fstream>

#include "accel/data.hpp"
#include "accel/error.hpp"

namespace {

std::string write_temp(const std::string& name, const std::string& text) {
  std::string path = ::testing::TempDir() + name;
  std::ofstream(path) << text;
  return path;
}

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const accel::Error& error) {
    return error.what();
  }
  return "no error";
}

TEST(CsvDataset, ReadsFeaturesAndTheNamedLabelColumn) {
  auto path = write_temp("ok.csv", "a, label ,b\n1.5,2,3\n-1,0,4e1\r\n\n");
  auto dataset = accel::load_csv_dataset(path, "label");
  ASSERT_EQ(dataset->size(), 2);
  accel::Batch batch = dataset->get_batch({1, 0});
  EXPECT_TRUE(at::equal(batch[0], at::tensor({-1.0f, 40.0f, 1.5f, 3.0f}).view({2, 2})));
  EXPECT_TRUE(at::equal(batch[1], at::tensor({int64_t{0}, int64_t{2}})));
  auto as_float = accel::load_csv_dataset(path, "label", at::kFloat);
  EXPECT_EQ(as_float->fields()[1].scalar_type(), at::kFloat);
}

TEST(CsvDataset, ErrorsNameTheFileLineAndColumn) {
  auto bad_cell = write_temp("bad.csv", "x,y\n1,2\n3,abc\n");
  EXPECT_NE(error_of([&] { accel::load_csv_dataset(bad_cell, "y"); }).find("bad.csv:3: column \"y\" holds \"abc\""),
            std::string::npos);
  auto short_row = write_temp("short.csv", "x,y\n1\n");
  EXPECT_NE(error_of([&] { accel::load_csv_dataset(short_row, "y"); }).find("short.csv:2: 1 cells, the header has 2"),
            std::string::npos);
  EXPECT_NE(error_of([&] { accel::load_csv_dataset(short_row, "label"); }).find("no column named \"label\""),
            std::string::npos);
  auto fractional = write_temp("frac.csv", "x,y\n1,0.5\n");
  EXPECT_NE(error_of([&] {
              accel::load_csv_dataset(fractional, "y");
            }).find("frac.csv:2: column \"y\" holds \"0.5\", not an integer"),
            std::string::npos);
  EXPECT_NE(error_of([] { accel::load_csv_dataset("/nonexistent/data.csv", "y"); }).find("/nonexistent/data.csv"),
            std::string::npos);
}

// Numbers are read strictly: strtod read "0x10" as 16, stopped at an embedded
// NUL ("2\0" was 2) and accepted "inf" and "nan".
TEST(CsvDataset, NumbersAreDecimalAndWholeCells) {
  auto ok = write_temp("strict_ok.csv", "x,y,label\n+1.5,-2e-3,+7\n.5,1E2,-3\n");
  auto dataset = accel::load_csv_dataset(ok, "label");
  EXPECT_TRUE(at::equal(dataset->fields()[0], at::tensor({1.5f, -0.002f, 0.5f, 100.0f}).view({2, 2})));
  EXPECT_TRUE(at::equal(dataset->fields()[1], at::tensor({int64_t{7}, int64_t{-3}})));
  // Integral labels beyond 2^53 stay exact (they went through double before).
  auto big = write_temp("strict_big.csv", "x,label\n1,9007199254740993\n");
  EXPECT_EQ(accel::load_csv_dataset(big, "label")->fields()[1][0].item<int64_t>(), int64_t{9007199254740993});
  // Float labels are kept as read, also for float64 (to() used to alias a freed vector).
  auto as_double = accel::load_csv_dataset(ok, "label", at::kDouble);
  EXPECT_TRUE(at::equal(as_double->fields()[1], at::tensor({7.0, -3.0}, at::kDouble)));

  const std::vector<std::pair<std::string, std::string>> refused{
      {"0x10", "column \"x\" holds \"0x10\", not a finite decimal number"},
      {std::string("2\0", 2), "column \"x\" holds \"2\\x00\", not a finite decimal number"},
      {"inf", "holds \"inf\", not a finite"},
      {"nan", "holds \"nan\", not a finite"},
      {"1e400", "holds \"1e400\", not a finite"},
      {"1e39", "holds \"1e39\", beyond the range of float32 features"},
      {"+-1", "holds \"+-1\""},
      {"1,5", "3 cells, the header has 2"},
      {"1 2", "holds \"1 2\""},
  };
  for (const auto& [cell, message] : refused) {
    auto path = write_temp("strict_bad.csv", "x,label\n3,1\n" + cell + ",1\n");
    std::string error = error_of([&] { accel::load_csv_dataset(path, "label"); });
    EXPECT_NE(error.find("strict_bad.csv:3: "), std::string::npos) << error;
    EXPECT_NE(error.find(message), std::string::npos) << cell << ": " << error;
  }
  auto hex_label = write_temp("strict_label.csv", "x,label\n1,0x10\n");
  EXPECT_NE(error_of([&] {
              accel::load_csv_dataset(hex_label, "label");
            }).find("strict_label.csv:2: column \"label\" holds \"0x10\", not an integer"),
            std::string::npos);
  auto float_label = write_temp("strict_label.csv", "x,label\n1,2.0\n");
  EXPECT_NE(error_of([&] { accel::load_csv_dataset(float_label, "label"); }).find("holds \"2.0\", not an integer"),
            std::string::npos);
}

TEST(CsvDataset, HeaderWithByteOrderMarkAndDuplicateNames) {
  // A UTF-8 byte order mark (Excel, Notepad) is not part of the first name.
  auto bom = write_temp("bom.csv", "\xEF\xBB\xBFlabel,x\n1,2.5\n");
  auto dataset = accel::load_csv_dataset(bom, "label");
  EXPECT_TRUE(at::equal(dataset->fields()[1], at::tensor({int64_t{1}})));
  auto duplicate = write_temp("dup.csv", "x,label,x\n1,2,3\n");
  EXPECT_NE(error_of([&] {
              accel::load_csv_dataset(duplicate, "label");
            }).find("dup.csv:1: column 3 is named \"x\" like column 1; column names must differ"),
            std::string::npos);
}

TEST(CallbackDataset, WritesSamplesStraightIntoBatchesAndTransforms) {
  std::vector<accel::FieldSpec> fields{{at::kFloat, {2}}, {at::kLong, {}}};
  auto read = [](int64_t i, const std::vector<void*>& out) {
    float* x = static_cast<float*>(out[0]);
    x[0] = static_cast<float>(i);
    x[1] = static_cast<float>(-i);
    *static_cast<int64_t*>(out[1]) = i * 10;
  };
  auto double_x = [](int64_t, const std::vector<void*>& out) {
    float* x = static_cast<float*>(out[0]);
    x[0] *= 2;
  };
  accel::CallbackDataset dataset(
      fields, [] { return int64_t{5}; }, read, double_x);
  EXPECT_EQ(dataset.size(), 5);
  accel::Batch batch = dataset.get_batch({3, 1});
  EXPECT_TRUE(at::equal(batch[0], at::tensor({6.0f, -3.0f, 2.0f, -1.0f}).view({2, 2})));
  EXPECT_TRUE(at::equal(batch[1], at::tensor({int64_t{30}, int64_t{10}})));
}

TEST(CallbackDataset, RejectsBadSpecs) {
  auto read = [](int64_t, const std::vector<void*>&) {};
  auto length = [] { return int64_t{1}; };
  EXPECT_NE(error_of([&] { accel::CallbackDataset({}, length, read); }).find("at least one field"), std::string::npos);
  EXPECT_NE(error_of([&] {
              accel::CallbackDataset({{at::kFloat, {0}}}, length, read);
            }).find("non-positive dimension 0"),
            std::string::npos);
  accel::CallbackDataset negative(
      {{at::kFloat, {}}}, [] { return int64_t{-2}; }, read);
  EXPECT_NE(error_of([&] { negative.size(); }).find("returned -2"), std::string::npos);
}

TEST(CallbackStream, YieldsSamplesUntilTheCallbackSaysStop) {
  int64_t next = 0;
  uint64_t epoch = 0;
  accel::CallbackStream stream(
      {{at::kInt, {3}}},
      [&](const std::vector<void*>& out) {
        if (next == 2) return false;
        int32_t* v = static_cast<int32_t*>(out[0]);
        v[0] = v[1] = v[2] = static_cast<int32_t>(next++);
        return true;
      },
      [&](uint64_t e) {
        next = 0;
        epoch = e;
      });
  stream.reset(4);
  EXPECT_EQ(epoch, 4u);
  auto a = stream.next();
  auto b = stream.next();
  ASSERT_TRUE(a && b);
  EXPECT_TRUE(at::equal((*b)[0], at::full({3}, 1, at::kInt)));
  EXPECT_FALSE(stream.next().has_value());
}

}  // namespace
