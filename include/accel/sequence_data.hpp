// libaccel C++ API: variable-length token sequences (language-model data).
//
// TokenSequences holds N sequences of int64 token ids back to back (a flat ids
// tensor and N + 1 offsets, the layout safetensors files of tokenised corpora
// use), optionally with labels. A SequenceDataset turns them into a map-style
// Dataset whose batches are collated per batch: padded to the longest sequence
// of that batch (Hugging Face's DataCollatorWithPadding and
// DataCollatorForLanguageModeling(mlm=False)), or by a caller's collate
// function. Its batches carry field names (input_ids, attention_mask, labels)
// so a named forward can take them as they are. Everything the DataLoader does
// (sharding, workers, resume) works on it unchanged: each process collates its
// own batch, as each rank of Accelerate runs its own collate_fn.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "accel/data.hpp"

namespace accel {

enum class LabelKind {
  None,       // no labels in the data
  PerSample,  // one int64 label per sequence (sequence classification)
  PerToken,   // one int64 label per token (token classification)
};

struct TokenSequences {
  at::Tensor ids;      // int64 [total]: every sequence back to back
  at::Tensor offsets;  // int64 [N + 1]: sequence i is ids[offsets[i], offsets[i + 1])
  LabelKind label_kind = LabelKind::None;
  at::Tensor labels;  // PerSample: int64 [N]; PerToken: int64 [total], aligned with ids

  int64_t size() const { return offsets.defined() ? offsets.size(0) - 1 : 0; }
  int64_t length(int64_t i) const;
  std::vector<int64_t> lengths() const;
};

// Validates and wraps flat ids and offsets (both int64 1-D; offsets start at
// 0, never decrease and end at ids' length; at least one sequence) and their
// labels (undefined, int64 [N] or int64 [total]). Ids must be >= 0 and, when
// vocab_size > 0, below it. Throws InvalidArgument naming the bad offset or
// the sequence, position and value of the bad id.
TokenSequences make_token_sequences(at::Tensor ids, at::Tensor offsets, at::Tensor labels = {}, int64_t vocab_size = 0);

// One JSON value per line: an object whose ids_key holds an array of integer
// ids (or, with ids_key empty, a bare array). labels_key, when not empty,
// names an integer (a per-sample label) or an array as long as the ids (per
// token labels); every line must have the same kind. Blank lines are skipped.
// Throws IO naming the file, the line and what is wrong there: invalid JSON, a
// missing key, a float or non-integer id, a negative id or one >= vocab_size
// (when > 0), labels of the wrong length or kind, no sequence at all.
TokenSequences load_jsonl_sequences(const std::string& path, const std::string& ids_key = "input_ids",
                                    const std::string& labels_key = "", int64_t vocab_size = 0);

// How a text file read as bytes (ids 0..255, a byte-level LM) is cut into samples.
struct TextSplit {
  enum class Rule {
    Lines,       // one sample per line ('\n'; a trailing '\r' is dropped); empty lines skipped
    Paragraphs,  // samples separated by one or more empty lines
    Separator,   // samples separated by lines holding only `separator` (fortune's "%")
    Chunks,      // windows of chunk_length bytes starting every stride bytes; the last may be shorter
  };
  Rule rule = Rule::Lines;
  std::string separator = "%";
  int64_t chunk_length = 128;
  int64_t stride = 0;  // 0: chunk_length (no overlap)
};
// Throws IO when the file cannot be read or yields no sample; InvalidArgument
// for a chunk_length < 1, a negative stride or an empty separator.
TokenSequences load_text_sequences(const std::string& path, const TextSplit& split);

// A text file split on whitespace into tokens, each mapped to its id in the
// vocabulary at vocab_path: a JSON object token -> id (a file starting with
// '{', Hugging Face's vocab.json) or one token per line, id = line - 1 (BERT's
// vocab.txt). A token not in it becomes "<unk>"'s id. Samples are cut as
// load_text_sequences does, except that Chunks counts tokens; samples without
// a token are skipped. Throws IO naming the file, line and token: an unknown
// token when the vocabulary has no "<unk>", an empty, duplicate or
// whitespace-holding vocabulary token, a negative or non-integer JSON id, no
// sample; InvalidArgument as load_text_sequences.
TokenSequences load_vocab_text_sequences(const std::string& path, const std::string& vocab_path,
                                         const TextSplit& split);

// A safetensors file holding a flat integer ids tensor, its offsets tensor and
// optionally labels (names as given; labels_name empty: none), checked as
// make_token_sequences does. Integer dtypes are widened to int64. Throws IO
// naming the file and tensor (missing, a float dtype, not 1-D) or the bad
// offset or id.
TokenSequences load_safetensors_sequences(const std::string& path, const std::string& ids_name = "input_ids",
                                          const std::string& offsets_name = "offsets",
                                          const std::string& labels_name = "", int64_t vocab_size = 0);

// Hugging Face's padding collators. Pads on the right.
struct PaddingOptions {
  int64_t pad_id = 0;
  int64_t pad_to_multiple_of = 0;  // > 0: the padded length is rounded up to a multiple of it
  // > 0: the longest a sequence may be; longer ones are cut to it when
  // truncate, refused (InvalidArgument naming the sample and its length) otherwise.
  int64_t max_length = 0;
  bool truncate = false;
  // Without labels in the data: labels = input_ids with the padding set to
  // -100 (DataCollatorForLanguageModeling(mlm=False)); false: no labels field.
  bool causal_lm_labels = true;
};

// A sample as a collate function receives it.
struct SequenceSample {
  int64_t index = 0;     // in the dataset
  at::Tensor input_ids;  // int64 [length] (a view: do not write to it)
  at::Tensor labels;     // undefined, int64 [] (per sample) or int64 [length] (per token)
};

// Collates the samples of one batch into one tensor per field name, in the
// order the dataset was given the names. May be called from worker threads.
using CollateFn = std::function<Batch(const std::vector<SequenceSample>& samples)>;

// The padding collator's batch: input_ids [B, L] int64 padded with pad_id,
// attention_mask [B, L] int64 (1 on real tokens), and labels: per-token
// labels padded with -100, per-sample labels [B], or causal LM labels.
Batch pad_sequences(const std::vector<SequenceSample>& samples, const PaddingOptions& options);
// The field names pad_sequences produces for data with these labels.
std::vector<std::string> padded_field_names(LabelKind labels, const PaddingOptions& options);

class SequenceDataset : public Dataset {
 public:
  // Batches padded by pad_sequences. Throws InvalidArgument for a negative
  // pad_id, pad_to_multiple_of or max_length.
  SequenceDataset(TokenSequences sequences, const PaddingOptions& options);
  // Batches made by collate, whose tensors are named names (non-empty,
  // distinct). get_batch throws InvalidArgument when collate returns another
  // number of tensors, an undefined one, or one whose dim 0 is not the batch
  // size (naming the field, the expected and the actual shape); an exception
  // from collate passes through.
  SequenceDataset(TokenSequences sequences, std::vector<std::string> names, CollateFn collate);

  int64_t size() const override { return sequences_.size(); }
  Batch get_batch(const std::vector<int64_t>& indices) const override;
  std::vector<std::string> field_names() const override { return names_; }
  const TokenSequences& sequences() const { return sequences_; }

 private:
  TokenSequences sequences_;
  std::vector<std::string> names_;
  CollateFn collate_;
};

// transformers' LengthGroupedSampler as batches, for one epoch: a permutation
// of 0..N-1 from torch.randperm (epoch e's is the (e+1)-th draw of a generator
// seeded with seed, as the sampler's own generator gives it at its (e+1)-th
// iteration), cut into megabatches of
// min(N / (4 * batch_size), 50) * batch_size (at least batch_size) samples,
// each sorted by decreasing length, the longest sample moved to the first
// batch (so an out-of-memory shows at once), then cut into batches of
// batch_size (the last one shorter unless drop_last drops it). The same on
// every process for the same seed: a loader over these batches is sharded as
// Accelerate's BatchSamplerShard does. Throws InvalidArgument for a
// batch_size < 1 or no lengths.
std::vector<std::vector<int64_t>> length_grouped_batches(const std::vector<int64_t>& lengths, int64_t batch_size,
                                                         uint64_t seed, bool drop_last, uint64_t epoch);
// Epoch 0's batches.
std::vector<std::vector<int64_t>> length_grouped_batches(const std::vector<int64_t>& lengths, int64_t batch_size,
                                                         uint64_t seed, bool drop_last = false);

}  // namespace accel
