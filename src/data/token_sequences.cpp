// Token sequences from JSONL, bytes of a text file and safetensors, validated
// once at load so collating never meets a bad id.
#include <ATen/ATen.h>

#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string_view>

#include "accel/error.hpp"
#include "accel/sequence_data.hpp"
#include "formats/safetensors.hpp"
#include "formats/tensor_io.hpp"
#include "core/json.hpp"
#include "data/text_ranges.hpp"

namespace accel {

namespace {

at::Tensor to_tensor(const std::vector<int64_t>& values) {
  return at::tensor(at::ArrayRef<int64_t>(values), at::kLong).clone();
}

// "sequence 3, position 5: id -1 is negative" style checks on a flat ids tensor.
void check_ids(const at::Tensor& ids, const at::Tensor& offsets, int64_t vocab_size, const std::string& where) {
  const int64_t* id = ids.data_ptr<int64_t>();
  const int64_t* off = offsets.data_ptr<int64_t>();
  int64_t sequence = 0;
  for (int64_t k = 0; k < ids.numel(); ++k) {
    if (id[k] >= 0 && (vocab_size <= 0 || id[k] < vocab_size)) continue;
    while (off[sequence + 1] <= k) ++sequence;
    fail(ErrorCode::InvalidArgument,
         where + "sequence " + std::to_string(sequence) + ", position " + std::to_string(k - off[sequence]) + ": id " +
             std::to_string(id[k]) +
             (id[k] < 0 ? " is negative" : " is not below the vocab size " + std::to_string(vocab_size)));
  }
}

// An integer from JSON, or the reason it is not one.
bool json_int(const nlohmann::json& value, int64_t* out) {
  if (value.is_number_integer() && !value.is_number_unsigned()) {
    *out = value.get<int64_t>();
    return true;
  }
  if (value.is_number_unsigned() && value.get<uint64_t>() <= static_cast<uint64_t>(INT64_MAX)) {
    *out = static_cast<int64_t>(value.get<uint64_t>());
    return true;
  }
  return false;
}

}  // namespace

int64_t TokenSequences::length(int64_t i) const {
  require_arg(i >= 0 && i < size(),
              "sequence index " + std::to_string(i) + " outside [0, " + std::to_string(size()) + ")");
  const int64_t* off = offsets.data_ptr<int64_t>();
  return off[i + 1] - off[i];
}

std::vector<int64_t> TokenSequences::lengths() const {
  std::vector<int64_t> result(static_cast<size_t>(size()));
  const int64_t* off = offsets.data_ptr<int64_t>();
  for (int64_t i = 0; i < size(); ++i) result[static_cast<size_t>(i)] = off[i + 1] - off[i];
  return result;
}

TokenSequences make_token_sequences(at::Tensor ids, at::Tensor offsets, at::Tensor labels, int64_t vocab_size) {
  require_arg(ids.defined() && ids.dim() == 1 && ids.scalar_type() == at::kLong,
              "token sequences: ids must be a 1-D int64 tensor");
  require_arg(offsets.defined() && offsets.dim() == 1 && offsets.scalar_type() == at::kLong,
              "token sequences: offsets must be a 1-D int64 tensor");
  require_arg(vocab_size >= 0, "token sequences: vocab_size must not be negative, got " + std::to_string(vocab_size));
  ids = ids.contiguous().cpu();
  offsets = offsets.contiguous().cpu();
  const int64_t n = offsets.numel() - 1;
  require_arg(n >= 1, "token sequences: offsets needs at least 2 entries (one sequence), got " +
                          std::to_string(offsets.numel()));
  const int64_t* off = offsets.data_ptr<int64_t>();
  require_arg(off[0] == 0, "token sequences: offsets[0] must be 0, got " + std::to_string(off[0]));
  for (int64_t i = 1; i <= n; ++i) {
    require_arg(off[i] >= off[i - 1], "token sequences: offsets[" + std::to_string(i) +
                                          "] = " + std::to_string(off[i]) + " is less than offsets[" +
                                          std::to_string(i - 1) + "] = " + std::to_string(off[i - 1]));
  }
  require_arg(off[n] == ids.numel(), "token sequences: the last offset is " + std::to_string(off[n]) +
                                         ", but ids has " + std::to_string(ids.numel()) + " entries");
  check_ids(ids, offsets, vocab_size, "token sequences: ");
  TokenSequences result;
  result.ids = ids;
  result.offsets = offsets;
  if (labels.defined()) {
    require_arg(labels.dim() == 1 && labels.scalar_type() == at::kLong, "token sequences: labels must be 1-D int64");
    require_arg(labels.numel() == n || labels.numel() == ids.numel(),
                "token sequences: labels has " + std::to_string(labels.numel()) + " entries, expected " +
                    std::to_string(n) + " (one per sequence) or " + std::to_string(ids.numel()) + " (one per token)");
    // With as many sequences as tokens (all of length 1) both readings agree.
    result.label_kind = labels.numel() == n ? LabelKind::PerSample : LabelKind::PerToken;
    result.labels = labels.contiguous().cpu();
  }
  return result;
}

TokenSequences load_jsonl_sequences(const std::string& path, const std::string& ids_key, const std::string& labels_key,
                                    int64_t vocab_size) {
  require_arg(vocab_size >= 0, "jsonl sequences: vocab_size must not be negative, got " + std::to_string(vocab_size));
  std::ifstream in(path, std::ios::binary);
  require(in.good(), ErrorCode::IO, "jsonl sequences: cannot open " + path);
  std::vector<int64_t> ids, offsets{0}, labels;
  LabelKind kind = LabelKind::None;
  std::string line;
  int64_t line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = path + ":" + std::to_string(line_no) + ": ";
    // Depth-limited, duplicate keys refused; the message names file and line.
    nlohmann::json value = detail::parse_json(line, path + ":" + std::to_string(line_no), ErrorCode::IO);
    const nlohmann::json* array = &value;
    if (!ids_key.empty()) {
      require(value.is_object(), ErrorCode::IO, where + "expected a JSON object with key '" + ids_key + "'");
      auto it = value.find(ids_key);
      require(it != value.end(), ErrorCode::IO, where + "no key '" + ids_key + "'");
      array = &*it;
    }
    const std::string what = ids_key.empty() ? std::string("ids") : "'" + ids_key + "'";
    require(array->is_array(), ErrorCode::IO, where + what + " is not an array of ids");
    for (size_t k = 0; k < array->size(); ++k) {
      const nlohmann::json& item = (*array)[k];
      int64_t id = 0;
      require(json_int(item, &id), ErrorCode::IO,
              where + what + "[" + std::to_string(k) + "] = " + detail::describe_json(item) + " is not an integer id");
      require(id >= 0, ErrorCode::IO,
              where + what + "[" + std::to_string(k) + "] = " + std::to_string(id) + " is negative");
      require(vocab_size == 0 || id < vocab_size, ErrorCode::IO,
              where + what + "[" + std::to_string(k) + "] = " + std::to_string(id) + " is not below the vocab size " +
                  std::to_string(vocab_size));
      ids.push_back(id);
    }
    offsets.push_back(static_cast<int64_t>(ids.size()));
    if (labels_key.empty()) continue;
    auto it = value.find(labels_key);
    require(it != value.end(), ErrorCode::IO, where + "no key '" + labels_key + "'");
    LabelKind here = it->is_array() ? LabelKind::PerToken : LabelKind::PerSample;
    require(kind == LabelKind::None || kind == here, ErrorCode::IO,
            where + "'" + labels_key + "' is " + (here == LabelKind::PerToken ? "an array" : "not an array") +
                " where the lines before had " + (kind == LabelKind::PerToken ? "arrays" : "single labels"));
    kind = here;
    if (here == LabelKind::PerSample) {
      int64_t label = 0;
      require(json_int(*it, &label), ErrorCode::IO,
              where + "'" + labels_key + "' = " + detail::describe_json(*it) + " is not an integer label");
      labels.push_back(label);
      continue;
    }
    require(it->size() == array->size(), ErrorCode::IO,
            where + "'" + labels_key + "' has " + std::to_string(it->size()) + " labels for " +
                std::to_string(array->size()) + " ids");
    for (size_t k = 0; k < it->size(); ++k) {
      int64_t label = 0;
      require(json_int((*it)[k], &label), ErrorCode::IO,
              where + "'" + labels_key + "'[" + std::to_string(k) + "] = " + detail::describe_json((*it)[k]) +
                  " is not an integer label");
      labels.push_back(label);
    }
  }
  require(!in.bad(), ErrorCode::IO, "jsonl sequences: error reading " + path);
  require(offsets.size() > 1, ErrorCode::IO, "jsonl sequences: " + path + " holds no sequence");
  TokenSequences result;
  result.ids = to_tensor(ids);
  result.offsets = to_tensor(offsets);
  result.label_kind = kind;
  if (kind != LabelKind::None) result.labels = to_tensor(labels);
  return result;
}

namespace detail {

std::vector<std::pair<int64_t, int64_t>> text_ranges(const std::string& text, const TextSplit& split) {
  std::vector<std::pair<int64_t, int64_t>> ranges;
  const auto n = static_cast<int64_t>(text.size());
  if (split.rule == TextSplit::Rule::Chunks) {
    const int64_t stride = split.stride > 0 ? split.stride : split.chunk_length;
    for (int64_t start = 0; start < n; start += stride) {
      ranges.emplace_back(start, std::min(n, start + split.chunk_length));
      if (start + split.chunk_length >= n) break;
    }
    return ranges;
  }
  // Line-based rules: walk the lines, closing a sample at a boundary line.
  int64_t sample_begin = -1, sample_end = -1;
  auto close = [&] {
    if (sample_begin >= 0 && sample_end > sample_begin) ranges.emplace_back(sample_begin, sample_end);
    sample_begin = sample_end = -1;
  };
  for (int64_t pos = 0; pos < n;) {
    int64_t eol = static_cast<int64_t>(text.find('\n', static_cast<size_t>(pos)));
    if (eol < 0) eol = n;
    int64_t content_end = eol > pos && text[static_cast<size_t>(eol - 1)] == '\r' ? eol - 1 : eol;
    std::string_view line(text.data() + pos, static_cast<size_t>(content_end - pos));
    const bool boundary = split.rule == TextSplit::Rule::Lines        ? true
                          : split.rule == TextSplit::Rule::Paragraphs ? line.empty()
                                                                      : line == split.separator;
    if (split.rule == TextSplit::Rule::Lines) {
      sample_begin = pos;
      sample_end = content_end;
      close();
    } else if (boundary) {
      close();
    } else {
      if (sample_begin < 0) sample_begin = pos;
      sample_end = std::min(n, eol + 1);  // keeps the sample's inner newlines
    }
    pos = eol + 1;
  }
  close();
  return ranges;
}

}  // namespace detail

TokenSequences load_text_sequences(const std::string& path, const TextSplit& split) {
  require_arg(split.rule != TextSplit::Rule::Chunks || split.chunk_length >= 1,
              "text sequences: chunk_length must be >= 1, got " + std::to_string(split.chunk_length));
  require_arg(split.stride >= 0, "text sequences: stride must not be negative, got " + std::to_string(split.stride));
  require_arg(split.rule != TextSplit::Rule::Separator || !split.separator.empty(),
              "text sequences: the separator is empty");
  std::ifstream in(path, std::ios::binary);
  require(in.good(), ErrorCode::IO, "text sequences: cannot open " + path);
  std::ostringstream buffer;
  buffer << in.rdbuf();
  require(!in.bad(), ErrorCode::IO, "text sequences: error reading " + path);
  const std::string text = buffer.str();
  auto ranges = detail::text_ranges(text, split);
  require(!ranges.empty(), ErrorCode::IO, "text sequences: " + path + " yields no sample");
  std::vector<int64_t> ids, offsets{0};
  for (const auto& [begin, end] : ranges) {
    for (int64_t k = begin; k < end; ++k) ids.push_back(static_cast<unsigned char>(text[static_cast<size_t>(k)]));
    offsets.push_back(static_cast<int64_t>(ids.size()));
  }
  TokenSequences result;
  result.ids = to_tensor(ids);
  result.offsets = to_tensor(offsets);
  return result;
}

TokenSequences load_safetensors_sequences(const std::string& path, const std::string& ids_name,
                                          const std::string& offsets_name, const std::string& labels_name,
                                          int64_t vocab_size) {
  auto file = safetensors::File::open(path);
  auto read = [&](const std::string& name) {
    const safetensors::Entry* entry = file.find(name);
    require(entry != nullptr, ErrorCode::IO, "safetensors sequences: " + path + " has no tensor '" + name + "'");
    at::Tensor t = detail::read_tensor(file, *entry);
    require(!at::isFloatingType(t.scalar_type()) && !at::isComplexType(t.scalar_type()) && t.scalar_type() != at::kBool,
            ErrorCode::IO,
            "safetensors sequences: tensor '" + name + "' in " + path + " has dtype " + entry->dtype +
                "; ids, offsets and labels must be integers");
    require(t.dim() == 1, ErrorCode::IO,
            "safetensors sequences: tensor '" + name + "' in " + path + " has " + std::to_string(t.dim()) +
                " dimensions, expected 1");
    return t.to(at::kLong).contiguous();
  };
  at::Tensor ids = read(ids_name);
  at::Tensor offsets = read(offsets_name);
  at::Tensor labels = labels_name.empty() ? at::Tensor() : read(labels_name);
  try {
    return make_token_sequences(ids, offsets, labels, vocab_size);
  } catch (const Error& e) {
    fail(ErrorCode::IO, "safetensors sequences: " + path + ": " + e.what());
  }
}

}  // namespace accel
