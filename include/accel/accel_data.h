/*
 * libaccel C ABI: datasets (tensors, IDX, CSV, safetensors, callbacks,
 * streams, token sequences) and dataloaders (included by accel/accel.h, whose
 * conventions hold here too). Preparing a loader for several processes is in
 * accel.h.
 */
#ifndef ACCEL_ACCEL_DATA_H
#define ACCEL_ACCEL_DATA_H

#include <stddef.h>
#include <stdint.h>

#include "accel/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------- */
/* Datasets and dataloaders                                                   */
/* ------------------------------------------------------------------------- */

/* A dataset of (inputs[i], targets[i]) pairs over two tensors with the same
   size on dim 0. The dataset keeps its own reference to the tensors; the
   handles stay the caller's. New handle in *out. */
ACCEL_API accel_status accel_dataset_from_tensors(const accel_tensor* inputs, const accel_tensor* targets,
                                                  accel_dataset** out);
/* A dataset from an IDX image file and an IDX label file (MNIST layout,
   gzip-compressed or raw). Images become float32 [1, rows, cols] scaled to
   [0, 1], then normalised as (x - mean) / std (mean 0, std 1: no change);
   labels become int64. Errors: IO naming the file and byte offset (bad magic,
   truncated file, image and label counts that differ) or the dimension whose
   size the file cannot hold, checked before the data is allocated. New handle
   in *out. */
ACCEL_API accel_status accel_dataset_from_idx(const char* images_path, const char* labels_path, double mean, double std,
                                              accel_dataset** out);
/* A dataset from a numeric CSV file with a header row: inputs are float32
   [N, columns - 1], targets the column named label_column as label_dtype [N].
   Cells are plain decimal numbers ("1", "-2.5", "3e-4", an optional leading
   "+"); "0x10", "inf", "nan", a cell with trailing bytes and a feature beyond
   float32's range are refused; labels of an integer dtype must be integers
   ("2", not "2.0"). A UTF-8 byte order mark before the header is skipped.
   Errors: IO naming the file, line, column and cell of a bad cell, a row of
   the wrong length, or header names that repeat (line 1); INVALID_ARGUMENT
   when no column has that name. New handle in *out. */
ACCEL_API accel_status accel_dataset_from_csv(const char* path, const char* label_column, accel_dtype label_dtype,
                                              accel_dataset** out);

/* A dataset from a directory of .safetensors shards (e.g. written by
   safetensors.numpy.save_file): every *.safetensors file holds the tensors
   named field_names[0..num_fields-1], aligned on dim 0; the shards are
   concatenated in file-name order and each name becomes one field of a sample
   (accel_dataloader_next returns the first two). Errors: IO naming the
   directory, file and tensor (no shards, a missing tensor, rows that differ
   between fields, a dtype or sample shape that differs from the first shard);
   INVALID_ARGUMENT for NULL or no names. New handle in *out. */
ACCEL_API accel_status accel_dataset_from_safetensors(const char* dir, const char* const* field_names, int num_fields,
                                                      accel_dataset** out);

/* Datasets whose samples come from the caller: how datasets written in Python,
   Java or Go reach the loader. A sample is a fixed list of fields, each of a
   fixed dtype and per-sample shape (e.g. float32 [1, 28, 28] and int64 []). */
typedef struct accel_field_spec {
  accel_dtype dtype;
  int ndim;             /* 0 for a scalar field */
  const int64_t* shape; /* ndim sizes, each > 0; copied */
} accel_field_spec;

/* Lets a callback say why it failed: call it before returning a non-OK status;
   the library's error then carries this message. Thread-local. */
ACCEL_API void accel_set_error(const char* message);

/* Accelerate's find_executable_batch_size: calls fn(user, batch_size) from
   starting_batch_size on. When fn returns ACCEL_ERR_RESOURCE (what libaccel's
   calls return when memory cannot be allocated: a CUDA or host allocation
   failure in forward, backward or an optimizer step), the cached CUDA memory
   is released and fn is called again with (int64_t)(batch_size * 0.9), as
   Accelerate 1.x does (128, 115, 103, 92, ...). *out is the batch size for
   which fn returned ACCEL_OK. Any other status of fn is returned at once with
   fn's message (accel_set_error). Errors: ACCEL_ERR_RESOURCE "No executable
   batch size found, reached zero." when the size reaches 0;
   INVALID_ARGUMENT for a NULL fn or out, or starting_batch_size < 0. Not
   collective by itself: with several processes fn's collectives must fail
   alike on every rank. */
typedef accel_status (*accel_batch_size_fn)(void* user, int64_t batch_size);
ACCEL_API accel_status accel_find_executable_batch_size(int64_t starting_batch_size, accel_batch_size_fn fn, void* user,
                                                        int64_t* out);

/* Callbacks of a map-style dataset. Each gets the user pointer given at
   creation and returns ACCEL_OK or an error status (see accel_set_error). With
   num_workers > 0 they are called from the loader's worker threads, possibly
   concurrently for different samples. */
typedef struct accel_dataset_callbacks {
  uint32_t struct_size;
  /* Number of samples. Required. */
  accel_status (*length)(void* user, int64_t* out);
  /* Writes sample `index` into fields[f] (nbytes[f] bytes each, contiguous,
     row-major, of field f's dtype and shape). Required. */
  accel_status (*get_sample)(void* user, int64_t index, void* const* fields, const size_t* nbytes);
  /* Optional: transforms the sample in place right after get_sample. */
  accel_status (*transform)(void* user, int64_t index, void* const* fields, const size_t* nbytes);
  /* Optional: called once when the library no longer needs user (after the
     dataset and every loader over it are freed); never when the creation
     fails, which leaves user to the caller. */
  void (*release)(void* user);
} accel_dataset_callbacks;

#define ACCEL_DATASET_CALLBACKS_INIT \
  { (uint32_t)sizeof(accel_dataset_callbacks), NULL, NULL, NULL, NULL }
ACCEL_API void accel_dataset_callbacks_init(accel_dataset_callbacks* callbacks);

/* A map-style dataset read through callbacks; the loader writes samples
   straight into its batch tensors. The callbacks struct is copied; user is
   borrowed until release. Errors: INVALID_ARGUMENT (no fields, a bad dtype or
   shape, a missing required callback). A failing callback makes the loader
   call that reads it return the callback's status with a message naming the
   callback and the sample index. New handle in *out. */
ACCEL_API accel_status accel_dataset_from_callbacks(const accel_field_spec* fields, int num_fields,
                                                    const accel_dataset_callbacks* callbacks, void* user,
                                                    accel_dataset** out);

/* Callbacks of an iterable (streaming) dataset, called from one thread at a time. */
typedef struct accel_stream_callbacks {
  uint32_t struct_size;
  /* Writes the next sample into fields and sets *has_sample = 1, or sets
   *has_sample = 0 at the end of the stream. Required. */
  accel_status (*next_sample)(void* user, void* const* fields, const size_t* nbytes, int* has_sample);
  /* Optional: starts a new pass over the stream (each epoch). */
  accel_status (*reset)(void* user, uint64_t epoch);
  void (*release)(void* user); /* optional, as for accel_dataset_callbacks */
} accel_stream_callbacks;

#define ACCEL_STREAM_CALLBACKS_INIT \
  { (uint32_t)sizeof(accel_stream_callbacks), NULL, NULL, NULL }
ACCEL_API void accel_stream_callbacks_init(accel_stream_callbacks* callbacks);

/* An iterable dataset read through callbacks. Prepared loaders shard it as
   Accelerate's IterableDatasetShard does: every process reads the whole stream
   and keeps its slice of each run of batch_size * num_processes samples; the
   last short run is completed from the first unless drop_last. Shuffling is
   the stream's own business (reset gets the epoch). New handle in *out. */
ACCEL_API accel_status accel_dataset_from_stream(const accel_field_spec* fields, int num_fields,
                                                 const accel_stream_callbacks* callbacks, void* user,
                                                 accel_dataset** out);

/* Variable-length token sequences (language-model data): N sequences of
   int64 ids, optionally with labels, read once and validated at load. A
   dataset over them collates each batch on its own: padded to the batch's
   longest sequence (accel_dataset_from_sequences) or by the caller's collate
   function (accel_dataset_from_sequences_collate); its fields have names
   (accel_dataloader_field_names). Read-only after creation: may be shared
   between threads and datasets. */

/* Sequences from flat arrays: sequence i is ids[offsets[i] .. offsets[i+1]),
   num_offsets = N + 1 (offsets[0] = 0, never decreasing, offsets[N] =
   num_ids). labels (NULL: none) holds N per-sequence labels or num_ids
   per-token labels. Ids must be >= 0 and, when vocab_size > 0, below it. The
   arrays are copied. Errors: INVALID_ARGUMENT naming the bad offset, the
   sequence, position and value of a bad id, or a labels count that is neither.
   New handle in *out (free with accel_sequences_free). */
ACCEL_API accel_status accel_sequences_from_arrays(const int64_t* ids, size_t num_ids, const int64_t* offsets,
                                                   size_t num_offsets, const int64_t* labels, size_t num_labels,
                                                   int64_t vocab_size, accel_sequences** out);
/* Sequences from a JSONL file: each non-blank line is a JSON object whose
   ids_key holds an array of integer ids ({"input_ids": [1, 2, 3]}), or with
   ids_key NULL or "" a bare array. labels_key (NULL or "": none) names an
   integer (one label per sequence) or an array as long as the ids (per-token
   labels), the same kind on every line. Errors: IO naming the file, the line
   and the value: invalid JSON, a missing key, a float or non-integer id, a
   negative id, an id >= vocab_size (when vocab_size > 0), labels of the wrong
   length or kind, no sequence at all; INVALID_ARGUMENT for a NULL path or a
   negative vocab_size. New handle in *out. */
ACCEL_API accel_status accel_sequences_from_jsonl(const char* path, const char* ids_key, const char* labels_key,
                                                  int64_t vocab_size, accel_sequences** out);

/* How accel_sequences_from_text cuts a file's bytes into samples. */
typedef enum accel_text_split {
  ACCEL_TEXT_LINES = 0,      /* one sample per line ("\r\n" or "\n"); empty lines skipped */
  ACCEL_TEXT_PARAGRAPHS = 1, /* samples separated by empty lines; inner newlines kept */
  ACCEL_TEXT_SEPARATOR = 2,  /* samples separated by lines holding only separator
                                (the fortune databases' "%"); inner newlines kept */
  ACCEL_TEXT_CHUNKS = 3      /* windows of chunk_length bytes starting every stride
                                bytes (0: chunk_length, no overlap); the last is
                                shorter when the file ends inside it */
} accel_text_split;
/* Sequences from a text file read as bytes: every byte is an id in [0, 256)
   (a byte-level language model), cut into samples by rule. separator is
   used only by ACCEL_TEXT_SEPARATOR (NULL: "%"), chunk_length and stride only
   by ACCEL_TEXT_CHUNKS. No labels: a causal LM's labels are its ids.
   Errors: IO when the file cannot be read or yields no sample;
   INVALID_ARGUMENT for an unknown rule, a chunk_length < 1 with
   ACCEL_TEXT_CHUNKS, a negative stride, an empty separator. New handle in *out. */
ACCEL_API accel_status accel_sequences_from_text(const char* path, accel_text_split rule, const char* separator,
                                                 int64_t chunk_length, int64_t stride, accel_sequences** out);
/* Sequences from a text file split on whitespace into tokens, each mapped to
   its id in the vocabulary at vocab_path: a JSON object token -> id (a file
   starting with '{', as Hugging Face's vocab.json) or one token per line, the
   token on line k (from 1) having id k - 1 (as BERT's vocab.txt). A token not
   in the vocabulary becomes the id of "<unk>". rule, separator, chunk_length
   and stride as accel_sequences_from_text, except that ACCEL_TEXT_CHUNKS
   counts tokens, not bytes; samples without a token are skipped. No labels.
   Not collective. Errors: IO naming the file, the line and the token: an
   unknown token when the vocabulary has no "<unk>", an empty, duplicate or
   whitespace-holding vocabulary token, a JSON id that is not an integer >= 0,
   an unreadable file, no sample; INVALID_ARGUMENT for a NULL path or
   vocab_path and as accel_sequences_from_text. New handle in *out (free with
   accel_sequences_free); *out is untouched on error. */
ACCEL_API accel_status accel_sequences_from_text_vocab(const char* path, const char* vocab_path, accel_text_split rule,
                                                       const char* separator, int64_t chunk_length, int64_t stride,
                                                       accel_sequences** out);
/* Sequences from one safetensors file holding a flat integer ids tensor and
   its offsets tensor (N + 1 entries, as for accel_sequences_from_arrays), and
   optionally labels (labels_name NULL or "": none); integer dtypes are
   widened to int64. ids_name NULL: "input_ids"; offsets_name NULL: "offsets".
   Errors: IO naming the file and the tensor (missing, not an integer dtype,
   not 1-D) or the bad offset or id. New handle in *out. */
ACCEL_API accel_status accel_sequences_from_safetensors(const char* path, const char* ids_name,
                                                        const char* offsets_name, const char* labels_name,
                                                        int64_t vocab_size, accel_sequences** out);
/* Number of sequences. */
ACCEL_API accel_status accel_sequences_count(const accel_sequences* sequences, int64_t* out);
/* Length (tokens) of sequence index. Errors: INVALID_ARGUMENT for an index
   outside [0, count). */
ACCEL_API accel_status accel_sequences_length(const accel_sequences* sequences, int64_t index, int64_t* out);
/* Sequence index as new handles: *ids int64 [length]; *labels its labels
   (int64 [] per sequence or [length] per token), or NULL when the sequences
   have none (labels may be NULL then). The caller frees both. Errors:
   INVALID_ARGUMENT for an index outside [0, count), or labels NULL when there
   are labels. */
ACCEL_API accel_status accel_sequences_get(const accel_sequences* sequences, int64_t index, accel_tensor** ids,
                                           accel_tensor** labels);
ACCEL_API void accel_sequences_free(accel_sequences* sequences);

/* Dynamic padding (Hugging Face's DataCollatorWithPadding and
   DataCollatorForLanguageModeling(mlm=False)); pads on the right. */
typedef struct accel_padding_options {
  uint32_t struct_size;
  int64_t pad_id;             /* default 0 */
  int64_t pad_to_multiple_of; /* > 0: the padded length is rounded up to a multiple; default 0 */
  /* > 0: the longest a sequence may be; a longer one is cut to it when
     truncate is set, else the loader call that reads it returns
     INVALID_ARGUMENT naming the sample and its length. Default 0 (no limit). */
  int64_t max_length;
  int truncate; /* default 0 */
  /* Without labels in the data: 1 (default) adds labels = input_ids with the
     padding set to -100 (a causal LM's labels; the model shifts them); 0 adds
     no labels field. */
  int causal_lm_labels;
} accel_padding_options;

#define ACCEL_PADDING_OPTIONS_INIT \
  { (uint32_t)sizeof(accel_padding_options), 0, 0, 0, 0, 1 }
ACCEL_API void accel_padding_options_init(accel_padding_options* opts);

/* A map-style dataset over sequences (kept alive by the dataset) whose
   batches are padded to their longest sequence: fields "input_ids" [B, L]
   int64 (padded with pad_id), "attention_mask" [B, L] int64 (1 on real
   tokens) and "labels": per-token labels [B, L] padded with -100, per-sequence
   labels [B], or the causal LM labels (see causal_lm_labels). opts may be
   NULL. Errors: INVALID_ARGUMENT for a negative pad_id, pad_to_multiple_of or
   max_length. New handle in *out. */
ACCEL_API accel_status accel_dataset_from_sequences(const accel_sequences* sequences, const accel_padding_options* opts,
                                                    accel_dataset** out);

/* A collate function: turns the num_samples sequences of one batch into one
   new tensor per field name, written to fields[0..num_fields-1] (all NULL on
   entry); the library takes every handle written there, also on failure.
   input_ids[s] is sample s's ids, int64 [length]; labels is NULL without
   labels, else labels[s] is int64 [] (per sequence) or [length] (per token).
   Both are borrowed for the call. Every field must have num_samples rows on
   dim 0. Return ACCEL_OK, or an error status after accel_set_error. Called
   from the loader's worker threads when num_workers > 0, possibly
   concurrently. */
typedef accel_status (*accel_collate_fn)(void* user, const accel_tensor* const* input_ids,
                                         const accel_tensor* const* labels, size_t num_samples, accel_tensor** fields,
                                         size_t num_fields);
/* A map-style dataset over sequences whose batches collate makes, with the
   field names field_names[0..num_fields-1] (copied). release (optional) is
   called once when the library no longer needs user (the dataset and every
   loader over it freed); never when creation fails. Errors:
   INVALID_ARGUMENT for NULL, empty or repeated names, or a NULL collate. A
   loader call that collates returns INVALID_ARGUMENT when a field comes back
   NULL or without num_samples rows (naming the field, the expected and the
   actual shape), or the callback's status with its message. New handle in
   *out. */
ACCEL_API accel_status accel_dataset_from_sequences_collate(const accel_sequences* sequences,
                                                            const char* const* field_names, int num_fields,
                                                            accel_collate_fn collate, void* user,
                                                            void (*release)(void* user), accel_dataset** out);

/* Number of samples. Errors: STATE for an iterable dataset (unknown length). */
ACCEL_API accel_status accel_dataset_size(const accel_dataset* dataset, int64_t* out);
/* *out = 1 for an iterable (streaming) dataset, 0 for a map-style one. */
ACCEL_API accel_status accel_dataset_is_iterable(const accel_dataset* dataset, int* out);
ACCEL_API void accel_dataset_free(accel_dataset* dataset);

typedef struct accel_dataloader_options {
  uint32_t struct_size;
  int64_t batch_size; /* default 1 */
  int shuffle;        /* default 0 */
  /* The loader's own generator (PyTorch's DataLoader(generator=...)): epoch e
     is shuffled with seed + e, identically on every process. 0 (default): no
     generator of its own; each epoch draws its seed from the global generator
     seeded by accel_accelerator_set_seed (PyTorch's RandomSampler), see
     use_seedable_sampler in accel_accelerator_options. */
  uint64_t seed;
  int drop_last; /* default 0 */
  /* Background threads reading batches ahead (0: read on the calling thread);
     the order of batches never depends on it. 0 to 256 (more is
     INVALID_ARGUMENT at create). They start with each epoch's first
     accel_dataloader_next: when the system refuses a thread (a process or
     thread limit, no memory for its stack) that call returns
     ACCEL_ERR_RESOURCE naming it, with no worker left running and nothing
     consumed, and the next call tries again. Default 0. */
  int num_workers;
  int prefetch_factor; /* batches read ahead per worker; default 2 */
} accel_dataloader_options;

#define ACCEL_DATALOADER_OPTIONS_INIT \
  { (uint32_t)sizeof(accel_dataloader_options), 1, 0, 0, 0, 0, 2 }
ACCEL_API void accel_dataloader_options_init(accel_dataloader_options* opts);

/* A dataloader over dataset (which it keeps alive). Before prepare it yields
   every batch on the CPU; after accel_accelerator_prepare_dataloader it yields
   this process's shard on the accelerator's device. opts may be NULL.
   New handle in *out. */
ACCEL_API accel_status accel_dataloader_create(accel_dataset* dataset, const accel_dataloader_options* opts,
                                               accel_dataloader** out);
/* A dataloader over a user's batch sampler (e.g. length-bucketed batches of
   varying sizes): batch b holds the batch_lengths[b] dataset indices that
   follow the previous batches' in indices; every epoch yields these batches in
   this order until accel_dataloader_set_batches replaces them. Prepared with several processes they are sharded as
   Accelerate's BatchSamplerShard does. opts->batch_size is the sampler's
   nominal batch size (Accelerate reads batch_sampler.batch_size): full batches
   have it, and 0 says sizes vary (then prepare refuses split_batches and
   even_batches with INVALID_ARGUMENT; set even_batches = 0). opts->drop_last is
   the sampler's: a short last round is dropped rather than completed.
   opts->shuffle must be 0. Both arrays are copied; the dataset is kept alive.
   Errors: INVALID_ARGUMENT (NULL arrays with num_batches > 0, a negative
   num_batches, a length < 1, an index outside [0, dataset size), shuffle set,
   a negative batch_size), STATE for an iterable dataset. New handle in *out. */
ACCEL_API accel_status accel_dataloader_create_from_batches(accel_dataset* dataset, const int64_t* indices,
                                                            const int64_t* batch_lengths, int64_t num_batches,
                                                            const accel_dataloader_options* opts,
                                                            accel_dataloader** out);
/* A loader over a sequence dataset whose batches group sequences of similar
   length (transformers' LengthGroupedSampler with the loader's batching): a
   permutation seeded with opts->seed (0 included: here it is a seed like any
   other, not "no generator") is cut into megabatches of min(N / (4 *
   batch_size), 50) batches, each sorted by decreasing length, the longest
   sequence moved into the first batch, then cut into batches of
   opts->batch_size (the last shorter unless opts->drop_last). Each epoch draws
   a new permutation, as the sampler's generator does when a transformers
   Trainer iterates it again: epoch e's is the (e+1)-th draw of a generator
   seeded with opts->seed (so a resumed epoch gets its batches back). The
   batches are the same on every process; prepared, they are sharded as Accelerate's BatchSamplerShard does, with
   batch_size as the sampler's. Errors: INVALID_ARGUMENT for a dataset that is
   not a sequence dataset, opts->shuffle set, a batch_size < 1. New handle in *out. */
ACCEL_API accel_status accel_dataloader_create_length_grouped(accel_dataset* dataset,
                                                              const accel_dataloader_options* opts,
                                                              accel_dataloader** out);
ACCEL_API void accel_dataloader_free(accel_dataloader* loader);
/* The next batch of this epoch as two new handles (the caller frees both). At
   the end of the epoch it returns ACCEL_OK with *inputs and *targets set to
   NULL; the call after that starts the next epoch (reshuffled: see seed in
   accel_dataloader_options). Collective where the loader dispatches, and at
   an epoch's first call for a shuffled loader without a seed prepared with
   several processes (the main process's draw is broadcast).
   Errors: INVALID_ARGUMENT when the dataset's samples are not (input, target)
   pairs (nothing is consumed: use accel_dataloader_next_fields); RESOURCE
   when a worker thread cannot start (see num_workers). */
ACCEL_API accel_status accel_dataloader_next(accel_dataloader* loader, accel_tensor** inputs, accel_tensor** targets);
/* The next batch as one new tensor handle per field, written to
   fields[0..*count-1] (capacity: the array's length); *count = 0 at the end of
   the epoch. The caller frees every handle. Errors: INVALID_ARGUMENT when the
   dataset has more fields than capacity (nothing is consumed then). */
ACCEL_API accel_status accel_dataloader_next_fields(accel_dataloader* loader, accel_tensor** fields, int capacity,
                                                    int* count);
/* The names of the fields accel_dataloader_next_fields returns, in order
   (input_ids, attention_mask, labels ...), written to names[0..*count-1];
   *count = 0 when the dataset's fields have no names (tensors, IDX, CSV,
   callbacks). The strings are owned by the loader and live as long as it.
   Errors: INVALID_ARGUMENT when there are more names than capacity. */
ACCEL_API accel_status accel_dataloader_field_names(const accel_dataloader* loader, const char** names, int capacity,
                                                    int* count);
/* Accelerate's len(loader). Unprepared: the batches of an epoch. Prepared
   with several processes: the length Accelerate's BatchSamplerShard reports
   (with split_batches, the unsplit count on every process; otherwise
   batches / num_processes, plus one when they do not divide unless drop_last,
   and with even_batches = 0 plus one only on the first batches %
   num_processes processes), or with dispatch_batches its dispatcher's (the
   global batches). With split_batches and even_batches = 0 a process that
   gets no slice of the short last batch yields one batch fewer than this, as
   in Accelerate. A loader from accel_dataloader_skip_first_batches reports
   num_batches fewer (at least 0) until its first pass ends. Errors: STATE for
   an iterable dataset (a stream has no length). */
ACCEL_API accel_status accel_dataloader_num_batches(const accel_dataloader* loader, int64_t* out);
/* A new loader (same dataset, options, preparation and epoch) whose next pass
   starts after the first num_batches batches of that epoch, without reading
   them for a map-style dataset; later passes are whole. Use it to resume
   mid-epoch (Accelerate's skip_first_batches). Its length is the original's
   minus num_batches, never negative. Errors: INVALID_ARGUMENT for a negative
   num_batches. New handle in *out. */
ACCEL_API accel_status accel_dataloader_skip_first_batches(const accel_dataloader* loader, int64_t num_batches,
                                                           accel_dataloader** out);
/* Sets the epoch of the next pass (a seeded shuffle uses seed + epoch) and restarts it. */
ACCEL_API accel_status accel_dataloader_set_epoch(accel_dataloader* loader, uint64_t epoch);
/* The epoch being iterated, or the next one to be between epochs (0 at
   first, set by accel_dataloader_set_epoch and by a resume from
   accel_accelerator_load_state). Errors: INVALID_ARGUMENT for a NULL argument. */
ACCEL_API accel_status accel_dataloader_epoch(const accel_dataloader* loader, uint64_t* out);
/* Where this loader's open epoch stands among the open epochs of the loaders
   prepared by its accelerator, in the order they opened: 0 for the first, 1
   for a loader iterated inside that one's epoch, ... (Accelerate's
   gradient_state.dataloader_references without its leading None; the last is
   the active_dataloader). -1 between epochs and for a loader not prepared.
   Errors: INVALID_ARGUMENT for a NULL argument or a bad handle. */
ACCEL_API accel_status accel_dataloader_open_index(const accel_dataloader* loader, int64_t* out);
/* Gives a loader over a batch sampler (accel_dataloader_create_from_batches,
   accel_dataloader_create_length_grouped) new batches, laid out as at
   creation, from the next epoch on: call it between epochs, before an epoch's
   first batch (a resumed epoch's too, with that epoch's batches), to feed a
   sampler that draws new batches each epoch, as PyTorch's DataLoader
   iterates its batch_sampler anew (see accel_dataloader_epoch). A
   length-grouped loader stops regrouping. Every process must set the same
   batches. Not collective. The arrays are copied. Errors: INVALID_ARGUMENT as
   at creation (nothing changes); STATE while an epoch is in progress or for a
   loader made without a batch sampler. */
ACCEL_API accel_status accel_dataloader_set_batches(accel_dataloader* loader, const int64_t* indices,
                                                    const int64_t* batch_lengths, int64_t num_batches);
/* A progress bar per epoch, on stderr of the process with RANK 0 only (what
   Accelerate users get from tqdm(loader, disable=not
   accelerator.is_local_main_process)): on a terminal it is redrawn in place
   with \r after every batch, elsewhere (a pipe, a file) it prints a plain line
   at every 10%. Its total is accel_dataloader_num_batches, so a loader over an
   iterable dataset shows none. description labels it ("" for "epoch N");
   NULL turns it off (the default). ACCEL_DISABLE_PROGRESS_BAR set to anything
   but "" or "0" silences it too. Not collective. Errors: INVALID_ARGUMENT for
   a NULL loader. The string is copied. */
ACCEL_API accel_status accel_dataloader_set_progress(accel_dataloader* loader, const char* description);

#ifdef __cplusplus
}
#endif

#endif /* ACCEL_ACCEL_DATA_H */
