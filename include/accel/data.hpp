// libaccel C++ API: datasets and the dataloader.
//
// A dataset yields samples made of one or more tensors ("fields", e.g. input
// and target). Map-style datasets (Dataset) are read by index; iterable
// datasets (IterableDataset) are streams read front to back. A DataLoader
// batches them; once prepared by an Accelerator it yields only this process's
// shard, with Accelerate's semantics, on the accelerator's device.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace accel {

using Batch = std::vector<at::Tensor>;   // one tensor per field, samples on dim 0
using Sample = std::vector<at::Tensor>;  // one tensor per field, without the batch dim

// A map-style dataset. get_batch may be called from the loader's worker
// threads, concurrently for different batches.
class Dataset {
 public:
  virtual ~Dataset() = default;
  virtual int64_t size() const = 0;
  // The samples at indices, collated: one tensor per field with the batch on dim 0.
  virtual Batch get_batch(const std::vector<int64_t>& indices) const = 0;
  // The names of the batch's fields (e.g. input_ids, attention_mask, labels),
  // in order; empty when the fields are positional only.
  virtual std::vector<std::string> field_names() const { return {}; }
};

// A stream of samples (PyTorch's IterableDataset). Read by one thread at a time.
class IterableDataset {
 public:
  virtual ~IterableDataset() = default;
  // Starts a new pass over the stream; epoch lets a stream shuffle itself per epoch.
  virtual void reset(uint64_t epoch) = 0;
  // The next sample of the pass, or nullopt when the stream is exhausted.
  virtual std::optional<Sample> next() = 0;
};

// Fields are tensors with equal size on dim 0; sample i is field[i] of each.
class TensorDataset : public Dataset {
 public:
  explicit TensorDataset(std::vector<at::Tensor> fields);
  int64_t size() const override;
  Batch get_batch(const std::vector<int64_t>& indices) const override;
  const std::vector<at::Tensor>& fields() const { return fields_; }

 private:
  std::vector<at::Tensor> fields_;
};

// An IDX image file and label file (MNIST layout, gzip or raw) as a TensorDataset:
// images float32 [N, 1, rows, cols] = (pixel / 255 - mean) / std, labels int64 [N].
// Throws IO naming the file and byte offset of what is wrong, or the dimension
// whose size the file cannot hold (checked before the data is allocated).
std::shared_ptr<TensorDataset> load_idx_dataset(const std::string& images_path, const std::string& labels_path,
                                                double mean = 0.0, double std = 1.0);

// A numeric CSV file with a header row: fields are float32 features [N, columns-1]
// and the column named label_column as label_dtype [N]. Cells are plain decimal
// numbers (std::from_chars, an optional leading '+'): "0x10", "inf", "nan",
// trailing bytes and features beyond float32 are refused, and labels of an
// integral dtype must be integers ("2", not "2.0"). A UTF-8 byte order mark is
// skipped. Throws IO naming the file, line, column and cell of a bad or missing
// cell, or the columns whose header names repeat; InvalidArgument when no
// column is named label_column.
std::shared_ptr<TensorDataset> load_csv_dataset(const std::string& path, const std::string& label_column,
                                                at::ScalarType label_dtype = at::kLong);

// A directory of .safetensors shards, each holding the tensors named fields
// (aligned on dim 0), concatenated in file-name order: one dataset field per
// name. Throws IO naming the file and the missing or mismatched tensor (or a
// header nesting more than 256 levels deep).
std::shared_ptr<TensorDataset> load_safetensors_dataset(const std::string& dir, const std::vector<std::string>& fields);

// The dtype and per-sample shape of one field of a callback dataset.
struct FieldSpec {
  at::ScalarType dtype = at::kFloat;
  std::vector<int64_t> shape;  // without the batch dim; {} for a scalar
};

// Writes one sample's fields into caller-provided buffers (one per field, of
// the field's dtype and shape, contiguous). Throws to report a failure.
using SampleWriter = std::function<void(int64_t index, const std::vector<void*>& fields)>;

// A map-style dataset whose samples come from functions: the way datasets
// written in Python, Java or Go reach the loader. Samples are written straight
// into the batch tensors (no per-sample allocation). transform, if set, runs on
// each sample's buffers after read. Functions may be called from worker threads.
class CallbackDataset : public Dataset {
 public:
  CallbackDataset(std::vector<FieldSpec> fields, std::function<int64_t()> length, SampleWriter read,
                  SampleWriter transform = nullptr);
  int64_t size() const override;
  Batch get_batch(const std::vector<int64_t>& indices) const override;
  const std::vector<FieldSpec>& fields() const { return fields_; }

 private:
  std::vector<FieldSpec> fields_;
  std::function<int64_t()> length_;
  SampleWriter read_;
  SampleWriter transform_;
};

// An iterable dataset whose samples come from functions. next writes the next
// sample into the buffers and returns false at the end of the stream; reset
// (optional) starts a new pass.
class CallbackStream : public IterableDataset {
 public:
  CallbackStream(std::vector<FieldSpec> fields, std::function<bool(const std::vector<void*>& fields)> next,
                 std::function<void(uint64_t epoch)> reset = nullptr);
  void reset(uint64_t epoch) override;
  std::optional<Sample> next() override;

 private:
  std::vector<FieldSpec> fields_;
  std::function<bool(const std::vector<void*>&)> next_;
  std::function<void(uint64_t)> reset_;
};

// A fixed cap rather than a multiple of the machine's cores, so a program that
// is valid on one machine is valid on every one; past a few dozen threads
// reading ahead gains nothing and only costs memory.
constexpr int kMaxNumWorkers = 256;

struct DataLoaderOptions {
  // For a loader over a batch sampler: the sampler's nominal batch size
  // (Accelerate reads batch_sampler.batch_size), 0 when its sizes vary.
  int64_t batch_size = 1;
  bool shuffle = false;  // map-style datasets only
  // The loader's own generator (PyTorch's DataLoader(generator=...)): epoch e
  // is shuffled with seed + e, identically on every process. Unset: each epoch
  // draws its seed from the global generator (at::manual_seed / set_seed), as
  // PyTorch's RandomSampler does, and prepared loaders take the main process's.
  std::optional<uint64_t> seed;
  bool drop_last = false;  // for a batch sampler: its drop_last
  // Background threads reading batches ahead; 0 reads on the caller's thread.
  // The order of batches never depends on it. At most kMaxNumWorkers. The
  // threads start with each epoch's first next(); when the system refuses one
  // (a thread limit) that call throws ErrorCode::Resource having stopped the
  // others, and the loader stays usable: the next call tries again.
  int num_workers = 0;
  int prefetch_factor = 2;  // batches read ahead per worker
};

class DataLoader;

// What the batch a prepared loader just yielded means for gradient sync and
// metrics (Accelerate's GradientState); shared with the Accelerator.
struct GradientState {
  // True on the micro-step that completes an accumulation window (and on a
  // dataloader's last batch): gradients are synchronised, and the prepared
  // optimizer and scheduler step. Always true without accumulation.
  bool sync_gradients = true;
  int64_t num_steps = 1;             // gradient_accumulation_steps
  int64_t step = 0;                  // micro-steps into the current window
  bool sync_with_dataloader = true;  // the dataloader's last batch always syncs
  bool end_of_dataloader = false;    // the batch just yielded is the epoch's last
  // Accelerate's remainder: from the start of each epoch of a prepared
  // loader, the dataset's length modulo the total batch size (batch_size,
  // times num_processes without split_batches); at the last batch of a stream
  // or a dispatched loader, the real samples of the last gathered round.
  // gather_for_metrics keeps that many rows of the last batch's gather when
  // positive. -1 outside an epoch, with drop_last, and while a stream's length
  // is unknown.
  int64_t remainder = -1;
  // The prepared loaders in an epoch, in the order their epochs opened
  // (Accelerate's dataloader_references without its leading None): a loader
  // enters at the next() that opens an epoch and leaves at the one that
  // reports its end, at set_epoch, resume_from, a new shard() and its
  // destruction. Kept by the loaders themselves, which also keep
  // end_of_dataloader and remainder those of the last one (Accelerate's
  // active_dataloader), all under open_loaders_mutex: a binding may free a
  // loader from a finalizer thread (Go's, Python's garbage collector) while
  // another loader of the accelerator runs.
  std::vector<const DataLoader*> open_loaders;
  mutable std::mutex open_loaders_mutex;
  bool in_dataloader() const {  // Accelerate's in_dataloader
    std::lock_guard<std::mutex> lock(open_loaders_mutex);
    return !open_loaders.empty();
  }
};

// Broadcasts the main process's batch (nullopt: end of epoch) to every process
// and returns it: how a dispatching loader shares what the main process read.
using BatchBroadcast = std::function<std::optional<Batch>(std::optional<Batch>)>;

// Where a prepared loader takes its shard from.
struct ShardPlacement {
  int num_processes = 1;
  int process_index = 0;
  bool split_batches = false;
  bool even_batches = true;
  std::optional<c10::Device> device;  // batches are moved here (none: stay on the host)
  std::shared_ptr<GradientState> gradient_state;
  BatchBroadcast dispatch;  // set: the main process reads, the others receive
  // Accelerate's SeedableRandomSampler: epoch e is shuffled with
  // (data_seed, else the global generator's initial seed) + e, whatever the
  // loader's own seed.
  bool use_seedable_sampler = false;
  std::optional<uint64_t> data_seed;
  // Returns the main process's value on every process (collective); set with
  // several processes, to agree on a seed drawn from the global generator.
  std::function<uint64_t(uint64_t)> agree_seed;
  // Called at the start of each epoch, before anything is drawn (Accelerate's
  // rng_types "torch"/"cuda": process 0's generator states everywhere).
  // Collective when set.
  std::function<void()> synchronize_rng;
};

class ProgressBar;

namespace detail {
class BatchSource;
}

class DataLoader {
 public:
  DataLoader(std::shared_ptr<Dataset> dataset, const DataLoaderOptions& options);
  DataLoader(std::shared_ptr<IterableDataset> dataset, const DataLoaderOptions& options);
  // A loader over a user's batch sampler: these batches of dataset indices, in
  // order (e.g. length-bucketed, of varying sizes), every epoch until
  // set_batches replaces them; prepared, they are sharded as Accelerate's
  // BatchSamplerShard does. options.batch_size is the sampler's batch size (0:
  // sizes vary; then, with several processes, split_batches and even_batches
  // are refused at prepare); shuffle must be false. Throws InvalidArgument
  // naming an empty batch or an index outside [0, dataset size).
  DataLoader(std::shared_ptr<Dataset> dataset, std::vector<std::vector<int64_t>> batches,
             const DataLoaderOptions& options);
  // A batch sampler that draws each epoch's batches anew (transformers'
  // LengthGroupedSampler): batches_for_epoch(e) gives epoch e's, called when
  // that epoch starts (epoch 0's here, checked as above). It must be a pure
  // function of e (a resumed run asks again for the epoch it resumes) and give
  // the same number of batches for every e (num_batches() reports it before an
  // epoch starts).
  using BatchesForEpoch = std::function<std::vector<std::vector<int64_t>>(uint64_t epoch)>;
  DataLoader(std::shared_ptr<Dataset> dataset, BatchesForEpoch batches_for_epoch, const DataLoaderOptions& options);
  ~DataLoader();
  DataLoader(const DataLoader&) = delete;
  DataLoader& operator=(const DataLoader&) = delete;

  // The next batch of the current epoch, or nullopt at its end; the call after
  // the end starts the next epoch (epoch number + 1, reshuffled: see
  // DataLoaderOptions::seed). Collective when dispatching, and at an epoch's
  // first call for a prepared shuffle without a seed (agree_seed) or with
  // generators to synchronize (synchronize_rng).
  std::optional<Batch> next();
  // How many tensors the batch next() returns holds (0 at the end of the
  // epoch), without consuming it: callers with a fixed number of slots check
  // before taking the batch. May read that batch (and start the epoch).
  size_t next_batch_size_in_fields();
  // Accelerate's len(): once prepared, the length its BatchSamplerShard (or
  // DataLoaderDispatcher) reports, the same on every process except where
  // Accelerate's differs (even_batches=false without split_batches: the first
  // processes count one more). With split_batches and even_batches=false a
  // process may yield one batch fewer than it reports, as in Accelerate. A
  // loader from skip_first_batches(k) reports k fewer (at least 0) until its
  // first pass ends. Throws State for an iterable dataset (a stream's length
  // is unknown).
  int64_t num_batches() const;
  // Sets the epoch of the next pass and restarts iteration.
  void set_epoch(uint64_t epoch);
  // A loader over a batch sampler yields `batches` from the next epoch on (a
  // resumed epoch included: its position counts these batches), as PyTorch's
  // DataLoader iterates its batch_sampler anew each epoch. Every process must
  // set the same batches. Checked as at construction; throws State while an
  // epoch is in progress or for a loader made without a batch sampler, and
  // leaves the loader unchanged when it throws.
  void set_batches(std::vector<std::vector<int64_t>> batches);
  uint64_t epoch() const { return epoch_; }
  // Where this loader's open epoch stands among the open epochs of the loaders
  // prepared by its accelerator, in the order they opened (GradientState's
  // open_loaders: 0 for the first); -1 between epochs and when not prepared.
  int64_t open_index() const;

  // A progress bar per epoch on stderr (accel::ProgressBar: redrawn in place on a
  // terminal, a line per 10% otherwise, only on rank 0), as Accelerate users wrap the
  // loader in tqdm(disable=not accelerator.is_local_main_process). Its total is
  // num_batches(): a loader over an iterable dataset shows none. The bar is labelled
  // description, or "epoch N" when it is empty; std::nullopt turns it off.
  void set_progress(std::optional<std::string> description);

  // Where iteration stands, for checkpoints: the epoch being (or next to be)
  // iterated and how many of its batches this process has already taken.
  // sampler_offset: batches of the epoch's batch sampler that a run with
  // another number of processes consumed before this one resumed it (load_state
  // of a checkpoint saved at another world size); the processes deal the
  // epoch's batches from there, so no sample is seen twice or skipped. 0 for
  // an epoch this run started.
  struct Position {
    uint64_t epoch = 0;
    int64_t batches_consumed = 0;
    int64_t sampler_offset = 0;
  };
  Position position() const;
  // The next next() continues from `position`: same epoch (hence the same
  // shuffle), skipping the consumed batches — without reading their samples
  // for map-style datasets; a stream has to be read past them.
  void resume_from(const Position& position);
  // A new loader over the same data, placement and epoch whose next pass
  // starts after the first `num_batches` batches (Accelerate's
  // skip_first_batches); passes after that one are whole. Its num_batches()
  // is this one's minus num_batches (at least 0) until that pass ends.
  std::unique_ptr<DataLoader> skip_first_batches(int64_t num_batches) const;

  // Used by Accelerator::prepare.
  void shard(const ShardPlacement& placement);
  bool is_prepared() const { return prepared_; }
  bool is_iterable() const { return stream_ != nullptr; }
  bool has_batch_sampler() const { return batch_sampler_ != nullptr; }
  const DataLoaderOptions& options() const { return options_; }
  const std::shared_ptr<Dataset>& dataset() const { return dataset_; }
  // The dataset's field names (Dataset::field_names; empty for a stream).
  std::vector<std::string> field_names() const {
    return dataset_ ? dataset_->field_names() : std::vector<std::string>{};
  }
  std::weak_ptr<const void> lifetime() const { return alive_; }

 private:
  using Batches = std::vector<std::vector<int64_t>>;
  std::unique_ptr<detail::BatchSource> open_epoch() const;
  // source_ set and reset through these, which keep GradientState::open_loaders.
  void open_source(std::unique_ptr<detail::BatchSource> source);
  void close_source();
  // Sets this loader's answers, enters or leaves the state's open loaders and
  // shows the active loader's answers there, under open_loaders_mutex (whose
  // holders call nothing that could call back into a binding).
  enum class Membership { Keep, Enter, Leave };
  void answer(bool end_of_dataloader, int64_t remainder, Membership membership);
  // The batches as shared, after naming an empty batch or an index outside the dataset.
  std::shared_ptr<const Batches> checked_batches(Batches batches, const char* what) const;
  void refresh_batches();                   // batches_for_epoch_'s batches of epoch_, before it opens
  uint64_t shuffle_seed(bool agree) const;  // agree: collective, every process opens the epoch
  int64_t epoch_remainder() const;
  // Samples of the epoch's order before sampler_offset_ (batches of
  // batch_size; a user's batch sampler skips whole batches instead).
  int64_t skipped_samples() const { return batch_sampler_ ? 0 : sampler_offset_ * options_.batch_size; }

  std::shared_ptr<Dataset> dataset_;
  std::shared_ptr<const std::vector<std::vector<int64_t>>> batch_sampler_;  // null: batches of batch_size
  BatchesForEpoch batches_for_epoch_;  // set: batch_sampler_ is batches_epoch_'s batches
  uint64_t batches_epoch_ = 0;
  std::shared_ptr<IterableDataset> stream_;
  DataLoaderOptions options_;
  ShardPlacement placement_;
  bool prepared_ = false;
  uint64_t epoch_ = 0;
  std::unique_ptr<detail::BatchSource> source_;  // null between epochs
  std::optional<Batch> lookahead_;               // tells end_of_dataloader one batch early
  std::exception_ptr lookahead_error_;           // reading ahead failed: thrown at the next call
  bool end_of_dataloader_ = false;               // this loader's GradientState answers (answer())
  int64_t remainder_ = -1;
  int64_t yielded_ = 0;         // batches of this epoch handed out
  int64_t resume_skip_ = 0;     // batches to skip when the next epoch starts
  int64_t skipped_pass_ = 0;    // skip_first_batches: left out of num_batches() this pass
  int64_t sampler_offset_ = 0;  // Position::sampler_offset of the current (or next) epoch
  std::shared_ptr<int> alive_ = std::make_shared<int>(0);
  void advance_progress();  // after a batch is handed out (dataloader_progress.cpp)
  std::optional<std::string> progress_description_;
  std::unique_ptr<ProgressBar> progress_;  // this epoch's bar; null between epochs
};

}  // namespace accel
