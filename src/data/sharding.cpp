#include "data/sharding.hpp"

#include "accel/error.hpp"

namespace accel::detail {

namespace {

using Batches = std::vector<std::vector<int64_t>>;

Batches chunk(const std::vector<int64_t>& order, int64_t batch_size) {
  Batches batches;
  for (size_t start = 0; start < order.size(); start += static_cast<size_t>(batch_size)) {
    size_t end = std::min(order.size(), start + static_cast<size_t>(batch_size));
    batches.emplace_back(order.begin() + static_cast<std::ptrdiff_t>(start),
                         order.begin() + static_cast<std::ptrdiff_t>(end));
  }
  return batches;
}

std::vector<int64_t> slice(const std::vector<int64_t>& batch, size_t begin, size_t length) {
  begin = std::min(begin, batch.size());
  size_t end = std::min(batch.size(), begin + length);
  return std::vector<int64_t>(batch.begin() + static_cast<std::ptrdiff_t>(begin),
                              batch.begin() + static_cast<std::ptrdiff_t>(end));
}

// split_batches: every full batch is cut into P slices; a short last batch is
// completed from the first batch (even_batches) or cut as far as it goes.
ShardPlan shard_split(Batches batches, const ShardSpec& spec) {
  const size_t B = static_cast<size_t>(spec.batch_size);
  const size_t slice_size = B / static_cast<size_t>(spec.num_processes);
  const size_t my_begin = slice_size * static_cast<size_t>(spec.process_index);
  ShardPlan plan;
  if (batches.empty()) return plan;
  std::vector<int64_t> first = batches.front();
  std::vector<int64_t> last;
  if (batches.back().size() < B) {
    last = std::move(batches.back());
    batches.pop_back();
  }
  for (const auto& batch : batches) plan.batches.push_back(slice(batch, my_begin, slice_size));
  if (last.empty() || spec.drop_last) return plan;
  plan.last_round_real_samples = static_cast<int64_t>(last.size());
  if (!spec.even_batches) {
    if (last.size() > my_begin) plan.batches.push_back(slice(last, my_begin, slice_size));
    return plan;
  }
  while (first.size() < B) first.insert(first.end(), first.begin(), first.end());
  last.insert(last.end(), first.begin(), first.end());
  plan.batches.push_back(slice(last, my_begin, slice_size));
  return plan;
}

}  // namespace

void validate(const ShardSpec& spec) {
  require_arg(spec.batch_size > 0, "batch_size must be positive, got " + std::to_string(spec.batch_size));
  require_arg(spec.num_processes > 0 && spec.process_index >= 0 && spec.process_index < spec.num_processes,
              "process_index " + std::to_string(spec.process_index) + " is not in [0, " +
                  std::to_string(spec.num_processes) + ")");
  require_arg(!spec.split_batches || spec.batch_size % spec.num_processes == 0,
              "split_batches: batch_size " + std::to_string(spec.batch_size) + " is not divisible by the " +
                  std::to_string(spec.num_processes) + " processes");
}

ShardPlan shard_batches(const std::vector<int64_t>& order, const ShardSpec& spec) {
  validate(spec);
  const size_t P = static_cast<size_t>(spec.num_processes);
  const size_t me = static_cast<size_t>(spec.process_index);
  const size_t B = static_cast<size_t>(spec.batch_size);

  Batches batches = chunk(order, spec.batch_size);
  if (spec.drop_last && !batches.empty() && batches.back().size() < B) batches.pop_back();

  ShardPlan plan;
  Batches& mine = plan.batches;
  if (P == 1) {
    mine = std::move(batches);
    return plan;
  }
  if (spec.split_batches) return shard_split(std::move(batches), spec);
  if (spec.drop_last) {
    // Only complete rounds: every process gets the same count, nothing is padded.
    for (size_t round = 0; (round + 1) * P <= batches.size(); ++round) mine.push_back(batches[round * P + me]);
    return plan;
  }
  if (!spec.even_batches) {
    for (size_t b = me; b < batches.size(); b += P) mine.push_back(batches[b]);
    return plan;
  }

  // A round is complete when it has P batches and its last one is full.
  size_t complete_rounds = batches.size() / P;
  if (complete_rounds > 0 && batches[complete_rounds * P - 1].size() < B) --complete_rounds;
  for (size_t round = 0; round < complete_rounds; ++round) mine.push_back(batches[round * P + me]);

  size_t tail_start = complete_rounds * P;
  if (tail_start == batches.size()) return plan;

  // The last round is completed with samples from the start of the epoch,
  // repeated as often as a tiny dataset needs.
  std::vector<int64_t> filler;
  for (size_t b = 0; b < std::min(P, batches.size()); ++b) filler.insert(filler.end(), batches[b].begin(), batches[b].end());
  while (filler.size() < P * B) filler.insert(filler.end(), filler.begin(), filler.end());

  size_t cursor = 0;
  for (size_t slot = 0; slot < P; ++slot) {
    size_t index = tail_start + slot;
    std::vector<int64_t> batch = index < batches.size() ? batches[index] : std::vector<int64_t>{};
    size_t missing = B - batch.size();
    plan.last_round_real_samples += static_cast<int64_t>(batch.size());
    batch.insert(batch.end(), filler.begin() + static_cast<std::ptrdiff_t>(cursor),
                 filler.begin() + static_cast<std::ptrdiff_t>(cursor + missing));
    cursor += missing;
    if (slot == me) mine.push_back(std::move(batch));
  }
  return plan;
}

}  // namespace accel::detail
