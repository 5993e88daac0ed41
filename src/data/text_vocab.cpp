// Token sequences from a text file split on whitespace and mapped to ids with
// a vocabulary (one token per line, or a JSON token -> id object).
#include <ATen/ATen.h>

#include <cctype>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <unordered_map>

#include "accel/error.hpp"
#include "accel/sequence_data.hpp"
#include "core/json.hpp"
#include "data/text_ranges.hpp"

namespace accel {

namespace {

std::string read_file(const std::string& path, const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  require(in.good(), ErrorCode::IO, "vocab text sequences: cannot open " + what + " " + path);
  std::ostringstream buffer;
  buffer << in.rdbuf();
  require(!in.bad(), ErrorCode::IO, "vocab text sequences: error reading " + what + " " + path);
  return buffer.str();
}

bool is_space(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }

bool has_space(const std::string& token) {
  for (char c : token)
    if (is_space(c)) return true;
  return false;
}

// token -> id. A file whose first non-space byte is '{' is a JSON object of
// non-negative integer ids (Hugging Face's vocab.json); otherwise line k
// (from 0) holds the token of id k (BERT's vocab.txt). Tokens must be
// non-empty, without whitespace (the text is split on it, so such a token
// could never match) and unique.
std::unordered_map<std::string, int64_t> load_vocab(const std::string& path) {
  const std::string text = read_file(path, "vocabulary");
  std::unordered_map<std::string, int64_t> vocab;
  const size_t first = text.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && text[first] == '{') {
    const nlohmann::json value = detail::parse_json(text, path, ErrorCode::IO);
    for (const auto& [token, id] : value.items()) {
      require(id.is_number_integer() && id.get<int64_t>() >= 0, ErrorCode::IO,
              "vocab text sequences: " + path + ": the id of \"" + token + "\" is " + detail::describe_json(id) +
                  ", expected an integer >= 0");
      require(!token.empty() && !has_space(token), ErrorCode::IO,
              "vocab text sequences: " + path + ": the token \"" + token + "\" is empty or holds whitespace");
      vocab.emplace(token, id.get<int64_t>());
    }
  } else {
    std::istringstream lines(text);
    std::string token;
    for (int64_t line = 1; std::getline(lines, token); ++line) {
      if (!token.empty() && token.back() == '\r') token.pop_back();
      require(!token.empty() && !has_space(token), ErrorCode::IO,
              "vocab text sequences: " + path + ":" + std::to_string(line) + ": the token \"" + token +
                  "\" is empty or holds whitespace");
      const bool added = vocab.emplace(token, line - 1).second;
      require(added, ErrorCode::IO,
              "vocab text sequences: " + path + ":" + std::to_string(line) + ": the token \"" + token +
                  "\" was already listed at line " + std::to_string(vocab[token] + 1));
    }
  }
  require(!vocab.empty(), ErrorCode::IO, "vocab text sequences: the vocabulary " + path + " holds no token");
  return vocab;
}

}  // namespace

TokenSequences load_vocab_text_sequences(const std::string& path, const std::string& vocab_path,
                                         const TextSplit& split) {
  require_arg(split.rule != TextSplit::Rule::Chunks || split.chunk_length >= 1,
              "vocab text sequences: chunk_length must be >= 1, got " + std::to_string(split.chunk_length));
  require_arg(split.stride >= 0,
              "vocab text sequences: stride must not be negative, got " + std::to_string(split.stride));
  require_arg(split.rule != TextSplit::Rule::Separator || !split.separator.empty(),
              "vocab text sequences: the separator is empty");
  const auto vocab = load_vocab(vocab_path);
  const auto unk = vocab.find("<unk>");
  const std::string text = read_file(path, "text");

  // The line-based rules pick the samples' byte ranges; Chunks cuts the whole
  // file's token stream into windows of chunk_length tokens (not bytes).
  TextSplit ranges_rule = split;
  if (split.rule == TextSplit::Rule::Chunks) ranges_rule.chunk_length = static_cast<int64_t>(text.size()) + 1;
  std::vector<int64_t> ids, offsets{0};
  int64_t line = 1, counted = 0;  // the line number of byte `counted`
  for (const auto& [begin, end] : detail::text_ranges(text, ranges_rule)) {
    for (int64_t k = begin; k < end;) {
      if (is_space(text[static_cast<size_t>(k)])) {
        ++k;
        continue;
      }
      int64_t stop = k;
      while (stop < end && !is_space(text[static_cast<size_t>(stop)])) ++stop;
      const std::string token = text.substr(static_cast<size_t>(k), static_cast<size_t>(stop - k));
      auto found = vocab.find(token);
      if (found == vocab.end()) {
        for (; counted < k; ++counted) line += text[static_cast<size_t>(counted)] == '\n';
        require(unk != vocab.end(), ErrorCode::IO,
                "vocab text sequences: " + path + ":" + std::to_string(line) + ": the token \"" + token +
                    "\" is not in the vocabulary " + vocab_path + ", which has no <unk>");
        found = unk;
      }
      ids.push_back(found->second);
      k = stop;
    }
    if (static_cast<int64_t>(ids.size()) > offsets.back()) offsets.push_back(static_cast<int64_t>(ids.size()));
  }
  if (split.rule == TextSplit::Rule::Chunks) {
    const int64_t n = static_cast<int64_t>(ids.size());
    const int64_t stride = split.stride > 0 ? split.stride : split.chunk_length;
    std::vector<int64_t> windows, window_offsets{0};
    for (int64_t start = 0; start < n; start += stride) {
      const int64_t stop = std::min(n, start + split.chunk_length);
      windows.insert(windows.end(), ids.begin() + start, ids.begin() + stop);
      window_offsets.push_back(static_cast<int64_t>(windows.size()));
      if (stop >= n) break;
    }
    ids.swap(windows);
    offsets.swap(window_offsets);
  }
  require(offsets.size() > 1, ErrorCode::IO, "vocab text sequences: " + path + " yields no sample");
  TokenSequences result;
  result.ids = at::tensor(at::ArrayRef<int64_t>(ids), at::kLong).clone();
  result.offsets = at::tensor(at::ArrayRef<int64_t>(offsets), at::kLong).clone();
  return result;
}

}  // namespace accel
