#include "data/loader_sharding.hpp"

#include "accel/error.hpp"

namespace accel::detail {

namespace {

using Batch = std::vector<int64_t>;

Batch slice(const Batch& batch, size_t begin, size_t length) {
  begin = std::min(begin, batch.size());
  size_t end = std::min(batch.size(), begin + length);
  return Batch(batch.begin() + static_cast<std::ptrdiff_t>(begin), batch.begin() + static_cast<std::ptrdiff_t>(end));
}

void append(Batch& to, const Batch& from) { to.insert(to.end(), from.begin(), from.end()); }

// split_batches: every full batch is cut into P slices (a short batch before
// the last is skipped, as Accelerate does); a short last batch is completed
// from the first batch (even_batches) or cut as far as it goes.
ShardPlan shard_split(const Batches& batches, const ShardSpec& spec) {
  const size_t B = static_cast<size_t>(spec.batch_size);
  const size_t slice_size = B / static_cast<size_t>(spec.num_processes);
  const size_t my_begin = slice_size * static_cast<size_t>(spec.process_index);
  ShardPlan plan;
  if (batches.empty()) return plan;
  for (const auto& batch : batches) {
    if (batch.size() == B) plan.batches.push_back(slice(batch, my_begin, slice_size));
  }
  const Batch& last = batches.back();
  if (spec.drop_last || last.size() >= B) return plan;
  if (!spec.even_batches) {
    if (last.size() > my_begin) plan.batches.push_back(slice(last, my_begin, slice_size));
    return plan;
  }
  Batch first = batches.front();
  while (first.size() < B) append(first, Batch(first));
  Batch completed = last;
  append(completed, first);
  plan.batches.push_back(slice(completed, my_begin, slice_size));
  return plan;
}

// Whole batches in turn. A round is handed out once its last batch is full
// (any batch when sizes vary); what is left completes from the start of the
// epoch (even_batches) or goes out short.
ShardPlan shard_whole(const Batches& batches, const ShardSpec& spec) {
  const size_t P = static_cast<size_t>(spec.num_processes);
  const size_t me = static_cast<size_t>(spec.process_index);
  const size_t B = static_cast<size_t>(spec.batch_size);  // 0: sizes vary
  ShardPlan plan;
  Batch initial;  // the first round's samples, to complete the last one
  std::optional<Batch> mine;
  for (size_t idx = 0; idx < batches.size(); ++idx) {
    if (!spec.drop_last && idx < P) append(initial, batches[idx]);
    if (idx % P == me) mine = batches[idx];
    if (idx % P == P - 1 && (B == 0 || batches[idx].size() == B)) {
      plan.batches.push_back(std::move(*mine));
      mine.reset();
    }
  }
  if (spec.drop_last || initial.empty()) return plan;
  if (!spec.even_batches) {
    if (mine && !mine->empty()) plan.batches.push_back(std::move(*mine));
    return plan;
  }
  if (mine && mine->size() == B) plan.batches.push_back(*mine);
  while (initial.size() < P * B) append(initial, Batch(initial));
  size_t idx = batches.size() - 1;
  Batch batch = batches.back();
  if (batch.size() == B) {  // already handed out by its process
    batch.clear();
    ++idx;
  }
  size_t cursor = 0;
  while (idx % P != 0 || !batch.empty()) {
    size_t end = cursor + B - batch.size();
    batch.insert(batch.end(), initial.begin() + static_cast<std::ptrdiff_t>(cursor),
                 initial.begin() + static_cast<std::ptrdiff_t>(end));
    if (idx % P == me) plan.batches.push_back(batch);
    cursor = end;
    batch.clear();
    ++idx;
  }
  return plan;
}

}  // namespace

void validate(const ShardSpec& spec) {
  require_arg(spec.batch_size >= 0, "batch_size must be positive, got " + std::to_string(spec.batch_size));
  require_arg(spec.num_processes > 0 && spec.process_index >= 0 && spec.process_index < spec.num_processes,
              "process_index " + std::to_string(spec.process_index) + " is not in [0, " +
                  std::to_string(spec.num_processes) + ")");
  if (spec.num_processes == 1) return;  // one process takes the batches as they are
  require_arg(spec.batch_size > 0 || !spec.split_batches,
              "split_batches needs a batch sampler with a batch size (batch_size 0: sizes vary)");
  require_arg(spec.batch_size > 0 || !spec.even_batches,
              "a batch sampler without a batch size (batch_size 0) needs even_batches = false");
  require_arg(!spec.split_batches || spec.batch_size % spec.num_processes == 0,
              "split_batches: batch_size " + std::to_string(spec.batch_size) + " is not divisible by the " +
                  std::to_string(spec.num_processes) + " processes");
}

Batches batch_sampler(const std::vector<int64_t>& order, const ShardSpec& spec) {
  require_arg(spec.batch_size > 0, "batch_size must be positive, got " + std::to_string(spec.batch_size));
  const size_t B = static_cast<size_t>(spec.batch_size);
  Batches batches;
  for (size_t start = 0; start < order.size(); start += B) {
    if (spec.drop_last && start + B > order.size()) break;
    batches.push_back(slice(order, start, B));
  }
  return batches;
}

ShardPlan shard_batch_list(const Batches& batches, const ShardSpec& spec) {
  validate(spec);
  if (spec.num_processes == 1) return ShardPlan{batches};
  return spec.split_batches ? shard_split(batches, spec) : shard_whole(batches, spec);
}

ShardPlan shard_batches(const std::vector<int64_t>& order, const ShardSpec& spec) {
  return shard_batch_list(batch_sampler(order, spec), spec);
}

int64_t shard_length(int64_t num_batches, const ShardSpec& spec) {
  const int64_t P = spec.num_processes;
  if (P == 1 || spec.split_batches) return num_batches;
  const int64_t length = num_batches / P;
  if (num_batches % P == 0 || spec.drop_last) return length;
  if (spec.even_batches) return length + 1;
  return spec.process_index < num_batches % P ? length + 1 : length;
}

}  // namespace accel::detail
