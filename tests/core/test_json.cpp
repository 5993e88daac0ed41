// The shared JSON parser of untrusted text: a nesting limit checked before
// anything is built, and error excerpts that stay short whatever the value.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/json.hpp"

namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

std::string nested(size_t depth, char open = '[', char close = ']') {
  return std::string(depth, open) + std::string(depth, close);
}

std::string nested_objects(size_t depth) {
  std::string text;
  for (size_t i = 0; i < depth; ++i) text += "{\"a\":";
  return text + "1" + std::string(depth, '}');
}

std::string error_of(const std::string& text, accel::ErrorCode code = accel::ErrorCode::IO) {
  try {
    accel::detail::parse_json(text, "the input", code);
  } catch (const accel::Error& error) {
    EXPECT_EQ(error.code(), code);
    return error.what();
  }
  return "no error";
}

TEST(ParseJson, RefusesNestingBeyondTheLimitNamingLabelAndDepth) {
  EXPECT_EQ(error_of(nested(accel::detail::kMaxJsonDepth)), "no error");
  EXPECT_EQ(error_of(nested(accel::detail::kMaxJsonDepth + 1)),
            "the input nests arrays and objects 257 levels deep; the limit is 256");
  EXPECT_EQ(error_of(nested(100000), accel::ErrorCode::InvalidArgument),
            "the input nests arrays and objects 100000 levels deep; the limit is 256");
  EXPECT_THAT(error_of(nested_objects(100000)), HasSubstr("100000 levels deep"));
  // Unclosed: the syntax error is found without recursion too.
  EXPECT_THAT(error_of(std::string(100000, '[')),
              AllOf(HasSubstr("the input is not valid JSON"), HasSubstr("column 100001")));
}

TEST(ParseJson, ReportsSyntaxErrorsWithThePosition) {
  EXPECT_THAT(error_of("{\"a\": 1,\n \"b\": }"), AllOf(HasSubstr("the input is not valid JSON"), HasSubstr("line 2")));
  EXPECT_THAT(error_of(""), HasSubstr("not valid JSON"));
  EXPECT_THAT(error_of("[1] 2"), HasSubstr("not valid JSON"));
  auto value = accel::detail::parse_json(R"({"a": [1, 2.5, "x"], "b": null})", "ok", accel::ErrorCode::IO);
  EXPECT_EQ(value["a"][2], "x");
}

TEST(DescribeJson, StaysShortForHugeAndDeepValues) {
  auto small = accel::detail::parse_json(R"({"a":[1,"\u00e9"],"b":true})", "t", accel::ErrorCode::IO);
  EXPECT_EQ(accel::detail::describe_json(small), R"({"a":[1,"é"],"b":true})");
  EXPECT_EQ(accel::detail::describe_json(nlohmann::json(std::string(1000000, 'x'))),
            "\"" + std::string(59, 'x') + "...");
  nlohmann::json wide = nlohmann::json::array();
  for (int i = 0; i < 100000; ++i) wide.push_back(i);
  EXPECT_EQ(accel::detail::describe_json(wide, 10), "[0,1,2,3,4...");
  // Built in place (a copy would itself recurse): dump() of this overflows the stack.
  nlohmann::json deep = nlohmann::json::array();
  nlohmann::json* inner = &deep;
  for (int i = 0; i < 200000; ++i) inner = &inner->emplace_back(nlohmann::json::array());
  EXPECT_EQ(accel::detail::describe_json(deep), std::string(60, '[') + "...");
}

}  // namespace

TEST(ParseJson, RefusesAKeyGivenTwiceInOneObject) {
  try {
    accel::detail::parse_json(R"({"a": {"x": 1, "y": 2}, "b": {"x": 3, "x": 4}})", "spec.json",
                              accel::ErrorCode::InvalidArgument);
    FAIL() << "accepted a duplicate key";
  } catch (const accel::Error& e) {
    EXPECT_EQ(e.code(), accel::ErrorCode::InvalidArgument);
    EXPECT_STREQ(e.what(), "spec.json names the key \"x\" twice in one object");
  }
  // The same key in sibling objects is fine.
  EXPECT_EQ(accel::detail::parse_json(R"([{"x": 1}, {"x": 2}])", "ok", accel::ErrorCode::IO).size(), 2u);
}
