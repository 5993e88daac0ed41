// Batches of variable-length sequences: dynamic padding, caller collate
// functions, and length-grouped batches.
#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <set>

#include "accel/error.hpp"
#include "accel/sequence_data.hpp"

namespace accel {

namespace {

constexpr int64_t kIgnoreIndex = -100;  // what PyTorch's cross-entropy skips

std::string shape_text(at::IntArrayRef shape) {
  std::string text = "[";
  for (size_t d = 0; d < shape.size(); ++d) text += (d ? ", " : "") + std::to_string(shape[d]);
  return text + "]";
}

void check_padding(const PaddingOptions& options) {
  require_arg(options.pad_id >= 0, "padding: pad_id must not be negative, got " + std::to_string(options.pad_id));
  require_arg(options.pad_to_multiple_of >= 0,
              "padding: pad_to_multiple_of must not be negative, got " + std::to_string(options.pad_to_multiple_of));
  require_arg(options.max_length >= 0,
              "padding: max_length must not be negative, got " + std::to_string(options.max_length));
}

void check_names(const std::vector<std::string>& names) {
  require_arg(!names.empty(), "sequence dataset: the collate function needs at least one field name");
  std::set<std::string> seen;
  for (const auto& name : names) {
    require_arg(!name.empty(), "sequence dataset: a field name is empty");
    require_arg(seen.insert(name).second, "sequence dataset: field name '" + name + "' repeats");
  }
}

}  // namespace

std::vector<std::string> padded_field_names(LabelKind labels, const PaddingOptions& options) {
  std::vector<std::string> names{"input_ids", "attention_mask"};
  if (labels != LabelKind::None || options.causal_lm_labels) names.emplace_back("labels");
  return names;
}

Batch pad_sequences(const std::vector<SequenceSample>& samples, const PaddingOptions& options) {
  require_arg(!samples.empty(), "padding: no samples to collate");
  const auto batch = static_cast<int64_t>(samples.size());
  std::vector<int64_t> lengths;
  int64_t longest = 0;
  for (const auto& sample : samples) {
    int64_t length = sample.input_ids.numel();
    if (options.max_length > 0 && length > options.max_length) {
      require_arg(options.truncate, "padding: sample " + std::to_string(sample.index) + " has " +
                                        std::to_string(length) + " tokens, more than max_length " +
                                        std::to_string(options.max_length) + " (set truncate to cut it)");
      length = options.max_length;
    }
    lengths.push_back(length);
    longest = std::max(longest, length);
  }
  int64_t padded = longest;
  if (options.pad_to_multiple_of > 0 && padded % options.pad_to_multiple_of != 0) {
    padded += options.pad_to_multiple_of - padded % options.pad_to_multiple_of;
  }
  const LabelKind kind = !samples[0].labels.defined()   ? LabelKind::None
                         : samples[0].labels.dim() == 0 ? LabelKind::PerSample
                                                        : LabelKind::PerToken;
  at::Tensor ids = at::full({batch, padded}, options.pad_id, at::kLong);
  at::Tensor mask = at::zeros({batch, padded}, at::kLong);
  at::Tensor labels;
  if (kind == LabelKind::PerSample) {
    labels = at::empty({batch}, at::kLong);
  } else if (kind == LabelKind::PerToken || options.causal_lm_labels) {
    labels = at::full({batch, padded}, kIgnoreIndex, at::kLong);
  }
  for (int64_t b = 0; b < batch; ++b) {
    const SequenceSample& sample = samples[static_cast<size_t>(b)];
    const int64_t length = lengths[static_cast<size_t>(b)];
    at::Tensor real = sample.input_ids.narrow(0, 0, length);
    ids[b].narrow(0, 0, length).copy_(real);
    mask[b].narrow(0, 0, length).fill_(1);
    if (kind == LabelKind::PerSample) {
      labels[b].copy_(sample.labels);
    } else if (kind == LabelKind::PerToken) {
      labels[b].narrow(0, 0, length).copy_(sample.labels.narrow(0, 0, length));
    } else if (labels.defined()) {
      // Only the padding is ignored: a real token equal to pad_id keeps its label.
      labels[b].narrow(0, 0, length).copy_(real);
    }
  }
  Batch result{ids, mask};
  if (labels.defined()) result.push_back(labels);
  return result;
}

SequenceDataset::SequenceDataset(TokenSequences sequences, const PaddingOptions& options)
    : sequences_(std::move(sequences)), names_(padded_field_names(sequences_.label_kind, options)) {
  check_padding(options);
  collate_ = [options](const std::vector<SequenceSample>& samples) { return pad_sequences(samples, options); };
}

SequenceDataset::SequenceDataset(TokenSequences sequences, std::vector<std::string> names, CollateFn collate)
    : sequences_(std::move(sequences)), names_(std::move(names)), collate_(std::move(collate)) {
  check_names(names_);
  require_arg(static_cast<bool>(collate_), "sequence dataset: the collate function is missing");
}

Batch SequenceDataset::get_batch(const std::vector<int64_t>& indices) const {
  std::vector<SequenceSample> samples;
  samples.reserve(indices.size());
  const int64_t* off = sequences_.offsets.data_ptr<int64_t>();
  for (int64_t i : indices) {
    require_arg(i >= 0 && i < size(),
                "sequence dataset: index " + std::to_string(i) + " outside [0, " + std::to_string(size()) + ")");
    SequenceSample sample;
    sample.index = i;
    sample.input_ids = sequences_.ids.narrow(0, off[i], off[i + 1] - off[i]);
    if (sequences_.label_kind == LabelKind::PerSample) {
      sample.labels = sequences_.labels[i];
    } else if (sequences_.label_kind == LabelKind::PerToken) {
      sample.labels = sequences_.labels.narrow(0, off[i], off[i + 1] - off[i]);
    }
    samples.push_back(std::move(sample));
  }
  Batch batch = collate_(samples);
  require_arg(batch.size() == names_.size(), "collate: returned " + std::to_string(batch.size()) + " tensors for the " +
                                                 std::to_string(names_.size()) + " field names");
  const auto rows = static_cast<int64_t>(indices.size());
  for (size_t f = 0; f < batch.size(); ++f) {
    const at::Tensor& t = batch[f];
    require_arg(t.defined(), "collate: field '" + names_[f] + "' is missing (an undefined tensor)");
    require_arg(t.dim() >= 1 && t.size(0) == rows, "collate: field '" + names_[f] + "' has shape " +
                                                       shape_text(t.sizes()) + ", expected [" + std::to_string(rows) +
                                                       ", ...] (one row per sample of the batch)");
  }
  return batch;
}

std::vector<std::vector<int64_t>> length_grouped_batches(const std::vector<int64_t>& lengths, int64_t batch_size,
                                                         uint64_t seed, bool drop_last, uint64_t epoch) {
  require_arg(batch_size >= 1, "length-grouped batches: batch_size must be >= 1, got " + std::to_string(batch_size));
  require_arg(!lengths.empty(), "length-grouped batches: no lengths");
  const auto n = static_cast<int64_t>(lengths.size());
  const int64_t mult = std::max<int64_t>(1, std::min<int64_t>(n / (batch_size * 4), 50));
  const int64_t mega = mult * batch_size;
  auto generator = at::make_generator<at::CPUGeneratorImpl>(seed);
  at::Tensor permutation;
  for (uint64_t draw = 0; draw <= epoch; ++draw) permutation = at::randperm(n, generator, at::kLong);
  std::vector<int64_t> order(permutation.data_ptr<int64_t>(), permutation.data_ptr<int64_t>() + n);
  auto longer = [&](int64_t a, int64_t b) { return lengths[static_cast<size_t>(a)] > lengths[static_cast<size_t>(b)]; };
  // Python's sorted(reverse=True) is stable, so ties keep the permutation's order.
  size_t longest_start = 0;
  for (int64_t start = 0; start < n; start += mega) {
    auto first = order.begin() + start, last = order.begin() + std::min(n, start + mega);
    std::stable_sort(first, last, longer);
    if (longer(*first, order[longest_start])) longest_start = static_cast<size_t>(start);  // first maximum wins
  }
  std::swap(order[0], order[longest_start]);
  std::vector<std::vector<int64_t>> batches;
  for (int64_t start = 0; start < n; start += batch_size) {
    if (drop_last && start + batch_size > n) break;
    batches.emplace_back(order.begin() + start, order.begin() + std::min(n, start + batch_size));
  }
  return batches;
}

std::vector<std::vector<int64_t>> length_grouped_batches(const std::vector<int64_t>& lengths, int64_t batch_size,
                                                         uint64_t seed, bool drop_last) {
  return length_grouped_batches(lengths, batch_size, seed, drop_last, 0);
}

}  // namespace accel
