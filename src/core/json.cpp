#include "core/json.hpp"

#include <optional>
#include <set>
#include <vector>

namespace accel::detail {

namespace {

// A SAX handler that builds nothing: it records how deep the input nests and
// the parser's message if the text is not JSON. nlohmann's SAX parser keeps
// its own state on the heap, so any depth is safe to scan.
class DepthScan final : public nlohmann::json_sax<nlohmann::json> {
 public:
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool key(string_t& name) override {
    // nlohmann keeps the last of two equal keys; a safetensors header naming a
    // tensor twice, or a spec giving a layer two types, would pass silently.
    if (objects_.back().insert(name).second) return true;
    duplicate = name;
    return false;
  }
  bool start_object(std::size_t) override {
    objects_.emplace_back();
    return enter();
  }
  bool end_object() override {
    objects_.pop_back();
    return leave();
  }
  bool start_array(std::size_t) override { return enter(); }
  bool end_array() override { return leave(); }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& error) override {
    message = error.what();
    return false;
  }

  size_t deepest = 0;
  std::string message;
  std::optional<std::string> duplicate;

 private:
  bool enter() {
    deepest = std::max(deepest, ++depth_);
    return true;
  }
  bool leave() {
    --depth_;
    return true;
  }
  size_t depth_ = 0;
  std::vector<std::set<std::string>> objects_;  // the keys of each open object
};

void append_bounded(std::string& out, const nlohmann::json& value, size_t budget) {
  if (out.size() > budget) return;
  if (value.is_array()) {
    out += '[';
    for (auto it = value.begin(); it != value.end() && out.size() <= budget; ++it) {
      if (it != value.begin()) out += ',';
      append_bounded(out, *it, budget);  // each level adds a '[': recursion ends within budget levels
    }
    out += ']';
  } else if (value.is_object()) {
    out += '{';
    for (auto it = value.begin(); it != value.end() && out.size() <= budget; ++it) {
      if (it != value.begin()) out += ',';
      append_bounded(out, nlohmann::json(it.key().substr(0, budget)), budget);
      out += ':';
      append_bounded(out, it.value(), budget);
    }
    out += '}';
  } else if (value.is_string()) {
    // Only the part that can be shown is escaped.
    nlohmann::json shown(value.get_ref<const std::string&>().substr(0, budget));
    out += shown.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  } else {
    out += value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }
}

}  // namespace

nlohmann::json parse_json(std::string_view text, const std::string& label, ErrorCode code, size_t max_depth) {
  DepthScan scan;
  if (!nlohmann::json::sax_parse(text.begin(), text.end(), &scan)) {
    if (scan.duplicate) {
      fail(code, label + " names the key " + describe_json(nlohmann::json(*scan.duplicate)) + " twice in one object");
    }
    fail(code, label + " is not valid JSON: " + scan.message);
  }
  if (scan.deepest > max_depth) {
    fail(code, label + " nests arrays and objects " + std::to_string(scan.deepest) + " levels deep; the limit is " +
                   std::to_string(max_depth));
  }
  try {
    return nlohmann::json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::exception& error) {  // the scan accepted it, so this is not expected
    fail(code, label + " is not valid JSON: " + error.what());
  }
}

std::string describe_json(const nlohmann::json& value, size_t max_chars) {
  std::string out;
  append_bounded(out, value, max_chars);
  if (out.size() > max_chars) out = out.substr(0, max_chars) + "...";
  return out;
}

}  // namespace accel::detail
