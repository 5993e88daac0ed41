#include "data/prefetcher.hpp"

#include "accel/error.hpp"

#include <exception>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace accel::detail {

Prefetcher::Prefetcher(int workers, int depth, int64_t count, std::function<Batch(int64_t)> read)
    : read_(std::move(read)), count_(count), window_(static_cast<size_t>(workers) * static_cast<size_t>(depth)) {
  require_arg(workers > 0, "num_workers must be positive here, got " + std::to_string(workers));
  require_arg(depth > 0, "prefetch_factor must be positive, got " + std::to_string(depth));
  threads_.reserve(static_cast<size_t>(workers));
  for (int w = 0; w < workers; ++w) {
    try {
      threads_.emplace_back([this] { work(); });
    } catch (const std::exception& e) {
      // std::system_error for a thread limit (RLIMIT_NPROC, cgroup pids.max)
      // or no address space for the stack, std::bad_alloc for its state: stop the workers already running, since a
      // joinable std::thread destroyed by the unwinding would call std::terminate.
      stop();
      fail(ErrorCode::Resource, "DataLoader: could not start worker thread " + std::to_string(w + 1) + " of " +
                                    std::to_string(workers) + " (" + e.what() +
                                    "); lower num_workers, or 0 to read on the calling thread");
    }
  }
  try {
    submit_more();
  } catch (...) {
    stop();
    throw;
  }
}

Prefetcher::~Prefetcher() { stop(); }

void Prefetcher::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    queue_.clear();  // abandoned tasks: their futures report broken_promise, never waited on
  }
  wake_.notify_all();
  for (auto& t : threads_) t.join();
  threads_.clear();
}

void Prefetcher::submit_more() {
  std::lock_guard<std::mutex> lock(mutex_);
  while (submitted_ < count_ && ready_.size() < window_) {
    int64_t k = submitted_++;
    std::packaged_task<Batch()> task([this, k] { return read_(k); });
    ready_.push_back(task.get_future());
    queue_.push_back(std::move(task));
  }
  wake_.notify_all();
}

void Prefetcher::work() {
#ifdef _OPENMP
  // The training loop's kernels own the cores: a worker's own kernels (index
  // gathers, collation) run on this thread alone instead of starting a second
  // OpenMP team that would spin against the first.
  omp_set_num_threads(1);
#endif
  for (;;) {
    std::packaged_task<Batch()> task;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    task();
  }
}

Batch Prefetcher::next() {
  require(!ready_.empty(), ErrorCode::State, "prefetcher: no batch left to read");
  std::future<Batch> front = std::move(ready_.front());
  ready_.pop_front();
  submit_more();
  return front.get();
}

}  // namespace accel::detail
