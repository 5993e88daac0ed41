#include "tracking/http_client.hpp"

#include <curl/curl.h>

#include <algorithm>
#include <mutex>

#include "accel/error.hpp"

namespace accel::detail {
namespace {

// curl_global_init is not thread-safe and must run once before any handle.
void global_init() {
  static std::once_flag once;
  static CURLcode code = CURLE_OK;
  std::call_once(once, [] { code = curl_global_init(CURL_GLOBAL_DEFAULT); });
  require(code == CURLE_OK, ErrorCode::Resource, std::string("libcurl failed to start: ") + curl_easy_strerror(code));
}

size_t append_body(char* data, size_t size, size_t count, void* out) {
  static_cast<std::string*>(out)->append(data, size * count);
  return size * count;
}

// libcurl's progress callback, also called while nothing moves: a non-zero return aborts the transfer.
int check_abort(void* abort, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  const auto& predicate = *static_cast<const std::function<bool()>*>(abort);
  return predicate && predicate() ? 1 : 0;
}

}  // namespace

HttpClient::HttpClient(HttpOptions options) : curl_(nullptr), options_(std::move(options)) {
  global_init();
  curl_ = curl_easy_init();
  require(curl_ != nullptr, ErrorCode::Resource, "libcurl could not create a connection handle");
  curl_slist* list = curl_slist_append(nullptr, "Content-Type: application/json");
  for (const auto& header : options_.headers) list = curl_slist_append(list, header.c_str());
  header_list_ = list;
}

HttpClient::~HttpClient() {
  curl_slist_free_all(static_cast<curl_slist*>(header_list_));
  curl_easy_cleanup(static_cast<CURL*>(curl_));
}

std::string HttpClient::escape(const std::string& text) {
  char* escaped = curl_easy_escape(static_cast<CURL*>(curl_), text.c_str(), static_cast<int>(text.size()));
  require(escaped != nullptr, ErrorCode::Resource, "libcurl could not escape '" + text + "'");
  std::string out(escaped);
  curl_free(escaped);
  return out;
}

HttpResponse HttpClient::request(const std::string& url, bool post, const std::string& body, long timeout_ms,
                                 const std::function<bool()>& abort) {
  CURL* curl = static_cast<CURL*>(curl_);
  curl_easy_reset(curl);  // keeps the open connection, forgets the previous request's options
  HttpResponse response;
  char error[CURL_ERROR_SIZE] = {0};
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, static_cast<curl_slist*>(header_list_));
  if (post) {
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body.c_str());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
  }
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, append_body);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &response.body);
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, std::max(1L, timeout_ms));
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, std::max(1L, std::min(timeout_ms, 10000L)));
  // Signals would interrupt the training program's own handlers; a worker thread must not raise them.
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
  if (abort) {
    curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, check_abort);
    curl_easy_setopt(curl, CURLOPT_XFERINFODATA, const_cast<std::function<bool()>*>(&abort));
  }
  if (!options_.username.empty()) {
    curl_easy_setopt(curl, CURLOPT_USERNAME, options_.username.c_str());
    curl_easy_setopt(curl, CURLOPT_PASSWORD, options_.password.c_str());
  }
  if (!options_.ca_file.empty()) curl_easy_setopt(curl, CURLOPT_CAINFO, options_.ca_file.c_str());
  if (options_.insecure) {
    curl_easy_setopt(curl, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, 0L);
  }
  const CURLcode code = curl_easy_perform(curl);
  if (code != CURLE_OK) {
    response.error = code == CURLE_ABORTED_BY_CALLBACK ? std::string("gave up waiting: the deadline passed")
                     : error[0] != '\0'                ? std::string(error)
                                                       : std::string(curl_easy_strerror(code));
    response.body.clear();
    return response;
  }
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &response.status);
  return response;
}

}  // namespace accel::detail
