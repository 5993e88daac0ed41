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
  EXPECT_NE(error_of([&] { accel::load_csv_dataset(fractional, "y"); }).find("label \"0.5\" is not an integer"),
            std::string::npos);
  EXPECT_NE(error_of([] { accel::load_csv_dataset("/nonexistent/data.csv", "y"); }).find("/nonexistent/data.csv"),
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
  accel::CallbackDataset dataset(fields, [] { return int64_t{5}; }, read, double_x);
  EXPECT_EQ(dataset.size(), 5);
  accel::Batch batch = dataset.get_batch({3, 1});
  EXPECT_TRUE(at::equal(batch[0], at::tensor({6.0f, -3.0f, 2.0f, -1.0f}).view({2, 2})));
  EXPECT_TRUE(at::equal(batch[1], at::tensor({int64_t{30}, int64_t{10}})));
}

TEST(CallbackDataset, RejectsBadSpecs) {
  auto read = [](int64_t, const std::vector<void*>&) {};
  auto length = [] { return int64_t{1}; };
  EXPECT_NE(error_of([&] { accel::CallbackDataset({}, length, read); }).find("at least one field"), std::string::npos);
  EXPECT_NE(error_of([&] { accel::CallbackDataset({{at::kFloat, {0}}}, length, read); }).find("non-positive dimension 0"),
            std::string::npos);
  accel::CallbackDataset negative({{at::kFloat, {}}}, [] { return int64_t{-2}; }, read);
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
