// Prepared dataloaders across real processes: for map-style and iterable
// datasets, with and without shuffling and drop_last, under the sharding mode
// given on the command line (split_batches, dispatch_batches, uneven):
//  - every process yields the same number of batches (even modes);
//  - gather_for_metrics over an epoch returns every sample exactly once;
//  - without even batches the processes' own batches still cover the epoch once.
#include <ATen/ATen.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "../data/number_datasets.hpp"
#include "accel/accel.hpp"
#include "dist_checks.hpp"

namespace {

using dist_checks::check;
using dist_checks::rank_for_messages;

using accel_test::as_vector;

}  // namespace

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "default";
  accel::AcceleratorOptions options;
  options.timeout = std::chrono::seconds(30);
  options.dataloader.split_batches = mode == "split" || mode == "dispatch_split";
  options.dataloader.dispatch_batches = mode == "dispatch" || mode == "dispatch_split";
  options.dataloader.even_batches = mode != "uneven";
  accel::Accelerator accelerator(options);
  const int rank = accelerator.process_index(), world = accelerator.num_processes();
  rank_for_messages = rank;

  int cases = 0;
  for (int64_t n : {12, 17, 25}) {
    for (int64_t batch_size : {2, 6}) {
      if (options.dataloader.split_batches && batch_size % world != 0) continue;
      for (bool iterable : {false, true}) {
        for (bool shuffle : {false, true}) {
          for (bool drop_last : {false, true}) {
            if (iterable && shuffle) continue;
            if (!options.dataloader.even_batches && iterable) continue;  // streams always even out
            std::string name = "n=" + std::to_string(n) + " bs=" + std::to_string(batch_size) +
                               (iterable ? " iterable" : " map") + (shuffle ? " shuffle" : "") +
                               (drop_last ? " drop_last" : "") + " mode=" + mode;
            accel::DataLoaderOptions lo;
            lo.batch_size = batch_size;
            lo.shuffle = shuffle;
            lo.seed = 7;
            lo.drop_last = drop_last;
            lo.num_workers = (n % 2 == 1) ? 1 : 0;
            at::Tensor x = at::arange(n, at::kFloat).unsqueeze(1).repeat({1, 2});
            at::Tensor y = at::arange(n, at::kLong);
            std::unique_ptr<accel::DataLoader> loader =
                iterable ? std::make_unique<accel::DataLoader>(std::make_shared<accel_test::CountingStream>(n, 2), lo)
                         : std::make_unique<accel::DataLoader>(
                               std::make_shared<accel::TensorDataset>(std::vector<at::Tensor>{x, y}), lo);
            accelerator.prepare(*loader);

            std::vector<int64_t> gathered, own;
            int64_t batches = 0;
            while (auto batch = loader->next()) {
              ++batches;
              check(at::equal((*batch)[0].select(1, 0).to(at::kLong), (*batch)[1]), name + ": fields disagree");
              auto mine = as_vector((*batch)[1]);
              own.insert(own.end(), mine.begin(), mine.end());
              if (options.dataloader.even_batches) {
                auto all = as_vector(accelerator.gather_for_metrics((*batch)[1]));
                gathered.insert(gathered.end(), all.begin(), all.end());
              }
            }
            auto counts = accelerator.gather(at::full({1}, batches, at::kLong));
            if (options.dataloader.even_batches) {
              check(counts.min().item<int64_t>() == counts.max().item<int64_t>(), name + ": batch counts differ");
            } else {
              auto everyone = accelerator.gather_object(
                  std::string(reinterpret_cast<const char*>(own.data()), own.size() * sizeof(int64_t)));
              gathered.clear();
              for (const auto& bytes : everyone) {
                const int64_t* v = reinterpret_cast<const int64_t*>(bytes.data());
                gathered.insert(gathered.end(), v, v + bytes.size() / sizeof(int64_t));
              }
            }
            std::vector<int> seen(static_cast<size_t>(n), 0);
            for (int64_t i : gathered) {
              check(i >= 0 && i < n, name + ": sample " + std::to_string(i) + " out of range");
              seen[static_cast<size_t>(i)] += 1;
            }
            for (int64_t i = 0; i < n; ++i) {
              if (drop_last) {
                check(seen[static_cast<size_t>(i)] <= 1, name + ": sample " + std::to_string(i) + " seen twice");
              } else {
                check(seen[static_cast<size_t>(i)] == 1, name + ": sample " + std::to_string(i) + " seen " +
                                                             std::to_string(seen[static_cast<size_t>(i)]) + " times");
              }
            }
            ++cases;
          }
        }
      }
    }
  }
  if (rank == 0) std::printf("dist_data %s: %d loader configurations, %d processes: ok\n", mode.c_str(), cases, world);
  return 0;
}
