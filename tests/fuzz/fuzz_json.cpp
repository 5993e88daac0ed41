// libFuzzer target for the JSON parser every untrusted JSON input goes
// through (model specs, safetensors headers, checkpoint metadata, tracker
// configs, sharded-checkpoint indexes): any bytes are either refused with an
// accel::Error or give a value that everything recursive can handle (copy,
// compare, dump) and that describe_json shows in at most 63 characters.
#include <cstdint>
#include <cstring>
#include <string_view>

#include "core/json.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    nlohmann::json value = accel::detail::parse_json(text, "fuzz", accel::ErrorCode::IO);
    nlohmann::json copy = value;
    if (copy != value) __builtin_trap();
    std::string again = value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    accel::detail::parse_json(again, "fuzz dump", accel::ErrorCode::IO);  // what we accept, we can re-read
    if (accel::detail::describe_json(value).size() > 63) __builtin_trap();
  } catch (const accel::Error& error) {
    if (std::strlen(error.what()) == 0) __builtin_trap();  // every rejection says why
  }
  return 0;
}
