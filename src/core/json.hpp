// JSON from untrusted text (model specs, safetensors headers, checkpoint
// metadata, tracker configs, sharded-checkpoint indexes), parsed with a
// nesting limit, and shown in error messages with a bounded length.
//
// Why a limit: nlohmann::json parses and destroys values without recursion,
// but copying, comparing and dump() recurse once per nesting level, so a
// 100,000-deep array parses fine and then overflows the stack the first time
// it is copied or shown in a message. Refusing deep input at parse time keeps
// every later recursion shallow. Plain C++ (no LibTorch), so the fuzz targets
// can build it on its own.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "accel/error.hpp"

namespace accel::detail {

// Deepest nesting of arrays and objects accepted. Legitimate inputs nest a
// handful of levels (a safetensors header 3, a model spec 4); Hugging Face's
// safetensors reader (serde_json) stops at 128.
constexpr size_t kMaxJsonDepth = 256;

// Parses text as one JSON value. Throws accel::Error with code when it is not
// valid JSON ("<label> is not valid JSON: <parser message with line and column>"),
// names a key twice in one object ("<label> names the key "k" twice in one object")
// or nests deeper than max_depth ("<label> nests arrays and objects N levels
// deep; the limit is M"), before any value is built.
nlohmann::json parse_json(std::string_view text, const std::string& label, ErrorCode code,
                          size_t max_depth = kMaxJsonDepth);

// The JSON text of value for an error message: at most max_chars characters
// (then "..."), produced without walking more of value than it shows, so a
// huge or deep value costs no more than a small one.
std::string describe_json(const nlohmann::json& value, size_t max_chars = 60);

}  // namespace accel::detail
