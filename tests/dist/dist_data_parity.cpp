// Accelerate parity of prepared loaders across real processes (issue 17):
//  - every process reports the len() and yields the batches that Accelerate
//    0.22's BatchSamplerShard gives it, for PyTorch batch samplers and for user
//    batch samplers of varying sizes, in every split/even mode, and the
//    batches IterableDatasetShard gives a stream without dispatch (the table
//    tests/data/files/accelerate_loader_shards.json, argv[1]);
//  - an iterable dataset prepared with dispatch_batches unset is dispatched
//    (Accelerate's default): its last short batch is split across processes
//    without padding beyond one row each, the remainder is the real rows, and
//    gather_for_metrics returns every sample once;
//  - a shuffle without a seed takes the main process's draw from the global
//    generator, even where the processes' generators differ.
#include <ATen/ATen.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "../data/number_datasets.hpp"
#include "accel/accel.hpp"
#include "dist_checks.hpp"

namespace {

using dist_checks::check;
using dist_checks::rank_for_messages;

using accel_test::as_vector;
using accel_test::numbers;

using Batches = std::vector<std::vector<int64_t>>;

// Accelerate's DataLoaderDispatcher over range(n) with per-process batch b:
// global batches of b * P rows; the last one's rows r give each process
// r / P rows, plus one (from the first rows) when r does not divide.
Batches expected_dispatch(int64_t n, int64_t b, int64_t P, int64_t rank) {
  Batches out;
  for (int64_t start = 0; start < n; start += b * P) {
    int64_t rows = std::min(b * P, n - start);
    int64_t slice = rows / P + (start + rows == n && rows % P != 0 ? 1 : 0);
    std::vector<int64_t> mine;
    for (int64_t k = slice * rank; k < slice * (rank + 1); ++k) mine.push_back(k < rows ? start + k : (k - rows) % n);
    out.push_back(mine);
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  check(argc > 1, "usage: dist_data_parity TABLE.json");
  accel::AcceleratorOptions options;
  options.timeout = std::chrono::seconds(30);
  accel::Accelerator accelerator(options);  // dispatch_batches unset
  const int rank = accelerator.process_index(), world = accelerator.num_processes();
  rank_for_messages = rank;

  std::ifstream in(argv[1]);
  check(in.good(), std::string("cannot read ") + argv[1]);
  int sharded = 0;
  for (const auto& row : nlohmann::json::parse(in)) {
    const bool stream = row["kind"] == "iterable_shard";  // dispatch_batches off: IterableDatasetShard
    if ((row["kind"] != "batch_sampler" && row["kind"] != "user_batches" && !stream) || row["num_processes"] != world) {
      continue;
    }
    accel::DataLoaderOptions lo;
    lo.batch_size = row["batch_size"];
    lo.drop_last = row["drop_last"];
    std::unique_ptr<accel::DataLoader> loader;
    if (stream) {
      loader = std::make_unique<accel::DataLoader>(std::make_shared<accel_test::CountingStream>(row["n"]), lo);
    } else if (row["kind"] == "user_batches") {
      loader = std::make_unique<accel::DataLoader>(numbers(32), row["sampler"].get<Batches>(), lo);
    } else {
      loader = std::make_unique<accel::DataLoader>(numbers(row["n"]), lo);
    }
    accel::ShardPlacement placement;  // the modes vary per row, so the placement is built here
    placement.num_processes = world;
    placement.process_index = rank;
    placement.split_batches = row["split_batches"];
    placement.even_batches = stream || row["even_batches"].get<bool>();
    placement.gradient_state = std::make_shared<accel::GradientState>();
    loader->shard(placement);
    Batches mine;
    while (auto batch = loader->next()) mine.push_back(as_vector((*batch)[1]));
    if (!stream) {
      check(loader->num_batches() == row["lengths"][static_cast<size_t>(rank)].get<int64_t>(), "len() " + row.dump());
    }
    check(mine == row["batches"][static_cast<size_t>(rank)].get<Batches>(), "batches " + row.dump());
    ++sharded;
  }
  check(sharded > 100, "too few table rows for " + std::to_string(world) + " processes");

  int dispatched = 0;
  for (int64_t n : {10, 17, 3}) {
    for (int64_t b : {1, 4}) {
      std::string name = "dispatch n=" + std::to_string(n) + " b=" + std::to_string(b);
      accel::DataLoaderOptions lo;
      lo.batch_size = b;
      accel::DataLoader loader(std::make_shared<accel_test::CountingStream>(n), lo);
      accelerator.prepare(loader);
      Batches mine;
      std::vector<int64_t> gathered;
      int64_t last_remainder = -2;
      while (auto batch = loader.next()) {
        mine.push_back(as_vector((*batch)[1]));
        if (accelerator.end_of_dataloader())
          last_remainder = accelerator.remainder();
        else
          check(accelerator.remainder() == -1, name + ": a stream's remainder is unknown before its end");
        auto all = as_vector(accelerator.gather_for_metrics((*batch)[1]));
        gathered.insert(gathered.end(), all.begin(), all.end());
      }
      check(mine == expected_dispatch(n, b, world, rank), name + ": batches");
      int64_t last_rows = n % (b * world) == 0 ? b * world : n % (b * world);
      check(last_remainder == last_rows, name + ": remainder " + std::to_string(last_remainder));
      std::vector<int64_t> all(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) all[static_cast<size_t>(i)] = i;
      check(gathered == all, name + ": gather_for_metrics does not return every sample once");
      ++dispatched;
    }
  }
  // A shuffle without a seed draws from the global generator; processes whose
  // generators differ still agree on the main process's permutation.
  {
    accel::DataLoaderOptions lo;
    lo.batch_size = 4;
    lo.shuffle = true;
    accel::DataLoader loader(numbers(24), lo);
    accelerator.prepare(loader);
    accelerator.set_seed(100 + static_cast<uint64_t>(rank));
    std::vector<int64_t> seen(24, 0);
    int64_t batches = 0;
    while (auto batch = loader.next()) {
      for (int64_t i : as_vector(accelerator.gather_for_metrics((*batch)[1]))) seen[static_cast<size_t>(i)] += 1;
      ++batches;
    }
    for (int64_t count : seen) check(count == 1, "unseeded shuffle: the processes disagree on the permutation");
    check(batches == 6 / world + (6 % world ? 1 : 0), "unseeded shuffle: batch count");
  }
  if (rank == 0) {
    std::printf("dist_data_parity: %d table rows and %d dispatched streams on %d processes: ok\n", sharded, dispatched,
                world);
  }
  return 0;
}
