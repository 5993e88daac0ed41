// A small blocking HTTP(S) client over libcurl, for trackers that talk to a server.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace accel::detail {

struct HttpResponse {
  long status = 0;    // the HTTP status; 0 when no answer came (refused, reset, timed out)
  std::string body;   // the answer's body
  std::string error;  // libcurl's reason when status is 0
};

struct HttpOptions {
  std::vector<std::string> headers;  // "Name: value", sent with every request
  std::string username, password;    // HTTP basic authentication when username is set
  std::string ca_file;               // a CA bundle other than the system's
  bool insecure = false;             // skip TLS certificate checks
};

// One connection reused across requests; use it from one thread at a time.
// Construction throws accel::Error(Resource) when libcurl cannot start.
class HttpClient {
 public:
  explicit HttpClient(HttpOptions options);
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;
  // A GET (when post is false) or a POST of a JSON body, giving up after
  // timeout_ms, or as soon as abort() returns true (polled while waiting).
  // Never throws for network failures: they come back as status 0 with error set.
  HttpResponse request(const std::string& url, bool post, const std::string& body, long timeout_ms,
                       const std::function<bool()>& abort = {});
  // Percent-encodes a query-string value.
  std::string escape(const std::string& text);

 private:
  void* curl_;  // CURL*, kept out of this header
  void* header_list_ = nullptr;
  HttpOptions options_;
};

}  // namespace accel::detail
