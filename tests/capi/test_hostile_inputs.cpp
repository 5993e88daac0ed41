// Hostile input through the C ABI: deeply nested JSON and shapes whose sizes
// overflow must come back as a status and a message, never a crash. (GoogleTest
// rather than C: the inputs are large strings built in code.)
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <string>

#include "accel/accel.h"
#include "accel/accel_checkpoint.h"
#include "accel/accel_tracking.h"

namespace {

using ::testing::HasSubstr;

std::string nested_arrays(size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); }

TEST(HostileInput, DeeplyNestedModelSpecIsRefused) {
  accel_model* model = nullptr;
  // 60,000 arrays parse without recursion, but the error message showed the
  // spec with a recursive dump() and overflowed the stack.
  EXPECT_EQ(accel_model_from_json(nested_arrays(60000).c_str(), &model), ACCEL_ERR_INVALID_ARGUMENT);
  EXPECT_THAT(accel_last_error(), HasSubstr("model spec nests arrays and objects 60000 levels deep; the limit is 256"));
  EXPECT_EQ(model, nullptr);
  // Within the limit, a bad value deep inside a layer is shown cut short.
  std::string spec = R"([{"type": "Linear", "in_features": )" + nested_arrays(250) + R"(, "out_features": 2}])";
  EXPECT_EQ(accel_model_from_json(spec.c_str(), &model), ACCEL_ERR_INVALID_ARGUMENT);
  EXPECT_THAT(accel_last_error(), HasSubstr("got [[[[[[[[[["));
  EXPECT_LT(std::string(accel_last_error()).size(), 300u);
  EXPECT_EQ(model, nullptr);
}

TEST(HostileInput, DeeplyNestedTrackerConfigIsRefused) {
  accel_accelerator_options opts;
  accel_accelerator_options_init(&opts);
  accel_accelerator* acc = nullptr;
  ASSERT_EQ(accel_accelerator_create(&opts, &acc), ACCEL_OK) << accel_last_error();
  std::string config = "{\"lr\": " + nested_arrays(100000) + "}";
  EXPECT_EQ(accel_accelerator_init_trackers(acc, "p", config.c_str()), ACCEL_ERR_INVALID_ARGUMENT);
  EXPECT_THAT(accel_last_error(), HasSubstr("nests arrays and objects 100001 levels deep"));
  EXPECT_THAT(accel_last_error(), HasSubstr("config_json \"{\"lr\": [[[[[[[[[["));  // the text, cut short
  EXPECT_THAT(accel_last_error(), HasSubstr("[[[[[[[[[[...\" nests"));
  // Within the limit the refused value is shown cut short.
  config = "{\"lr\": " + nested_arrays(200) + "}";
  EXPECT_EQ(accel_accelerator_init_trackers(acc, "p", config.c_str()), ACCEL_ERR_INVALID_ARGUMENT);
  EXPECT_THAT(accel_last_error(), HasSubstr("value of 'lr' must be a number, string or boolean, got [[[[[["));
  EXPECT_EQ(accel_accelerator_init_trackers(acc, "p", "{\"lr\": 0.5}"), ACCEL_OK) << accel_last_error();
  accel_accelerator_free(acc);
}

TEST(HostileInput, TensorShapesWhoseByteCountOverflowsAreRefused) {
  accel_tensor* tensor = nullptr;
  const uint8_t byte = 0;
  // 2^62 float32 elements: 2^64 bytes, which wrapped to 0 and matched nbytes 0.
  const int64_t wraps[] = {int64_t{1} << 62};
  EXPECT_EQ(accel_tensor_from_buffer(&byte, 0, ACCEL_FLOAT32, wraps, 1, &tensor), ACCEL_ERR_INVALID_ARGUMENT);
  EXPECT_THAT(accel_last_error(), HasSubstr("shape[0] is 4611686018427387904"));
  EXPECT_EQ(tensor, nullptr);
  const int64_t product[] = {3, INT64_MAX / 2};
  EXPECT_EQ(accel_tensor_from_buffer(&byte, 1, ACCEL_UINT8, product, 2, &tensor), ACCEL_ERR_INVALID_ARGUMENT);
  EXPECT_THAT(accel_last_error(), HasSubstr("shape[1] is 4611686018427387903"));
  EXPECT_THAT(accel_last_error(), HasSubstr("more bytes than fit in 63 bits"));
  EXPECT_EQ(tensor, nullptr);
  // A zero size makes an empty tensor whatever the others are.
  const int64_t empty[] = {INT64_MAX, 0};
  ASSERT_EQ(accel_tensor_from_buffer(nullptr, 0, ACCEL_FLOAT64, empty, 2, &tensor), ACCEL_OK) << accel_last_error();
  int64_t numel = -1;
  EXPECT_EQ(accel_tensor_numel(tensor, &numel), ACCEL_OK);
  EXPECT_EQ(numel, 0);
  accel_tensor_free(tensor);
}

// A safetensors header that is not UTF-8: the message quoted its bytes, which
// the bindings could not decode (Python showed "libaccel error", code 7). The
// file and the cause are named, and the message is UTF-8 (bad bytes as \xNN).
TEST(HostileInput, ANonUtf8SafetensorsHeaderNamesTheFileAndTheCause) {
  const std::string path = ::testing::TempDir() + "not_utf8.safetensors";
  const std::string header = "{\"0.weight\xff\xfe\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}";
  std::string bytes(8, '\0');
  for (size_t i = 0; i < 8; ++i) bytes[i] = static_cast<char>((header.size() >> (8 * i)) & 0xff);
  bytes += header + std::string(4, '\0');
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  accel_accelerator* acc = nullptr;
  accel_model* model = nullptr;
  ASSERT_EQ(accel_accelerator_create(nullptr, &acc), ACCEL_OK) << accel_last_error();
  ASSERT_EQ(accel_model_from_json(R"([{"type": "Linear", "in_features": 1, "out_features": 1}])", &model), ACCEL_OK);
  EXPECT_EQ(accel_accelerator_load_checkpoint_in_model(acc, model, path.c_str(), 0, nullptr, nullptr), ACCEL_ERR_IO);
  const std::string message = accel_last_error();
  EXPECT_THAT(message, HasSubstr(path + ": not a valid safetensors file: header is not valid JSON"));
  EXPECT_THAT(message, HasSubstr("UTF-8"));
  EXPECT_THAT(message, HasSubstr("\\xff"));
  EXPECT_EQ(message.find('\xff'), std::string::npos);
  accel_model_free(model);
  accel_accelerator_free(acc);
}

}  // namespace
