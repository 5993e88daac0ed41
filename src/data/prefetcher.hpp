// Reads batches ahead on background threads, handing them out in the order
// they were asked for whatever thread finished first: the loader's order never
// depends on num_workers.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

#include "accel/data.hpp"

namespace accel::detail {

class Prefetcher {
 public:
  // Runs read(k) for k = 0, 1, ..., count-1 on `workers` threads, at most
  // workers * depth batches ahead of the consumer. Throws accel::Error
  // Resource when the system refuses a thread (no worker is left running).
  Prefetcher(int workers, int depth, int64_t count, std::function<Batch(int64_t)> read);
  ~Prefetcher();
  Prefetcher(const Prefetcher&) = delete;
  Prefetcher& operator=(const Prefetcher&) = delete;

  // Batch k (in order); rethrows what read(k) threw. Call exactly count times.
  Batch next();

 private:
  void submit_more();
  void work();
  void stop();  // ends and joins the workers; idempotent

  std::function<Batch(int64_t)> read_;
  int64_t count_;
  size_t window_;
  int64_t submitted_ = 0;
  std::deque<std::future<Batch>> ready_;  // in submission order

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::packaged_task<Batch()>> queue_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace accel::detail
