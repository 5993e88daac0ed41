// libFuzzer target for the JSON entry points of the C ABI that need LibTorch:
// accel_model_from_json (first byte odd, as 'm') and the config_json of
// accel_accelerator_init_trackers (first byte even, as 't'). Links the ordinary
// libaccel, so only this file is instrumented: it finds crashes (a stack
// overflow is a deadly signal) and statuses without a message or with
// ACCEL_ERR_INTERNAL (an exception nobody expected), not coverage inside the
// library; the shared parser has its own instrumented target (fuzz_json).
#include <cctype>
#include <cstdint>
#include <cstring>
#include <string>

#include "accel/accel.h"
#include "accel/accel_tracking.h"

namespace {

void check(accel_status status) {
  if (status == ACCEL_OK) return;
  if (status == ACCEL_ERR_INTERNAL || std::strlen(accel_last_error()) == 0) __builtin_trap();
}

accel_accelerator* make_accelerator() {
  accel_accelerator_options opts;
  accel_accelerator_options_init(&opts);
  accel_accelerator* acc = nullptr;
  if (accel_accelerator_create(&opts, &acc) != ACCEL_OK) __builtin_trap();
  return acc;
}

// Layer sizes are what the spec asks for: keep them small so that a mutated
// "in_features": 99999999 tests the parser, not the machine's memory.
bool small_numbers(const std::string& text) {
  size_t digits = 0;
  for (char c : text) {
    digits = std::isdigit(static_cast<unsigned char>(c)) ? digits + 1 : 0;
    if (digits > 2) return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (data[0] & 1) {
    if (!small_numbers(text)) return 0;
    accel_model* model = nullptr;
    check(accel_model_from_json(text.c_str(), &model));
    accel_model_free(model);
  } else {
    static accel_accelerator* acc = make_accelerator();
    accel_status status = accel_accelerator_init_trackers(acc, "fuzz", text.c_str());
    check(status);
    if (status == ACCEL_OK) {  // trackers start once per accelerator
      accel_accelerator_free(acc);
      acc = make_accelerator();
    }
  }
  return 0;
}
