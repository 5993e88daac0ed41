#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_map>

#include "capi/handles.hpp"

namespace accel::capi {

namespace {

thread_local std::string last_error;

std::mutex registry_mutex;
std::unordered_map<const void*, HandleKind>& registry() {
  static auto* live = new std::unordered_map<const void*, HandleKind>();  // outlives static destructors
  return *live;
}

// Messages quote what a file holds (a safetensors header's bytes, a pickle's
// strings); the bindings decode them as UTF-8, and Python's raise failed on a
// non-UTF-8 message, leaving a bare "libaccel error" with the internal code
// instead of the message. Bytes that are not well-formed UTF-8 are shown as \xNN.
std::string valid_utf8(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  for (size_t i = 0; i < n;) {
    const unsigned char c = p[i];
    size_t length = c < 0x80                   ? 1
                    : (c >= 0xc2 && c <= 0xdf) ? 2
                    : (c >= 0xe0 && c <= 0xef) ? 3
                    : (c >= 0xf0 && c <= 0xf4) ? 4
                                               : 0;
    bool ok = length > 0 && i + length <= n;
    for (size_t k = 1; ok && k < length; ++k) ok = (p[i + k] & 0xc0) == 0x80;
    // Overlong three- and four-byte forms, surrogates and code points past U+10FFFF.
    if (ok && length == 3) ok = !(c == 0xe0 && p[i + 1] < 0xa0) && !(c == 0xed && p[i + 1] >= 0xa0);
    if (ok && length == 4) ok = !(c == 0xf0 && p[i + 1] < 0x90) && !(c == 0xf4 && p[i + 1] >= 0x90);
    if (!ok) {
      char escaped[5];
      std::snprintf(escaped, sizeof escaped, "\\x%02x", c);
      out += escaped;
      ++i;
      continue;
    }
    out.append(text, i, length);
    i += length;
  }
  return out;
}

}  // namespace

void register_handle(const void* handle, HandleKind kind) {
  std::lock_guard<std::mutex> lock(registry_mutex);
  registry()[handle] = kind;
}

bool unregister_handle(const void* handle, HandleKind kind) {
  std::lock_guard<std::mutex> lock(registry_mutex);
  auto it = registry().find(handle);
  if (it == registry().end() || it->second != kind) return false;
  registry().erase(it);
  return true;
}

bool is_live(const void* handle, HandleKind kind) {
  std::lock_guard<std::mutex> lock(registry_mutex);
  auto it = registry().find(handle);
  return it != registry().end() && it->second == kind;
}

std::vector<std::string> string_array(const char* const* items, size_t count, const char* parameter) {
  accel::require_arg(items != nullptr || count == 0,
                     std::string(parameter) + " is NULL but count is " + std::to_string(count));
  std::vector<std::string> out;
  for (size_t i = 0; i < count; ++i) {
    accel::require_arg(items[i] != nullptr, std::string(parameter) + "[" + std::to_string(i) + "] is NULL");
    out.emplace_back(items[i]);
  }
  return out;
}

// A malloc'd copy, so accel_string_free is plain free().
char* new_string(const std::string& text) {
  char* copy = static_cast<char*>(std::malloc(text.size() + 1));
  if (copy == nullptr) throw std::bad_alloc();
  std::memcpy(copy, text.c_str(), text.size() + 1);
  return copy;
}

accel_status record_error(accel_status status, const std::string& message) {
  last_error = valid_utf8(message);
  return status;
}

void check_callback(const accel_status& status, const std::string& what) {
  const int code = enum_value(status);  // a callback may return any int
  if (code == ACCEL_OK) return;
  bool known = code >= ACCEL_ERR_INVALID_ARGUMENT && code <= ACCEL_ERR_RESOURCE;
  std::string message = !last_error.empty() ? last_error
                        : known             ? std::string("no message (status ") + accel_status_name(status) + ")"
                                            : "no message (status " + std::to_string(code) + ")";
  throw accel::Error(known ? static_cast<accel::ErrorCode>(code) : accel::ErrorCode::Internal,
                     what + " failed: " + message);
}

}  // namespace accel::capi

extern "C" {

ACCEL_API void accel_set_error(const char* message) { accel::capi::last_error = message != nullptr ? message : ""; }

ACCEL_API const char* accel_last_error(void) { return accel::capi::last_error.c_str(); }

ACCEL_API const char* accel_status_name(accel_status status) {
  switch (accel::capi::enum_value(status)) {
    case ACCEL_OK: return "ACCEL_OK";
    case ACCEL_ERR_INVALID_ARGUMENT: return "ACCEL_ERR_INVALID_ARGUMENT";
    case ACCEL_ERR_STATE: return "ACCEL_ERR_STATE";
    case ACCEL_ERR_IO: return "ACCEL_ERR_IO";
    case ACCEL_ERR_DISTRIBUTED: return "ACCEL_ERR_DISTRIBUTED";
    case ACCEL_ERR_TIMEOUT: return "ACCEL_ERR_TIMEOUT";
    case ACCEL_ERR_UNSUPPORTED: return "ACCEL_ERR_UNSUPPORTED";
    case ACCEL_ERR_INTERNAL: return "ACCEL_ERR_INTERNAL";
    case ACCEL_ERR_RESOURCE: return "ACCEL_ERR_RESOURCE";
  }
  return "ACCEL_ERR_UNKNOWN";
}

}  // extern "C"
