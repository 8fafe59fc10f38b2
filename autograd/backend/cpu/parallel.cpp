#include "autograd/backend/cpu/parallel.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace sg::cpu {

namespace {

// True on a thread that is running chunks of a parallel_for: a kernel called from inside one
// (nested parallelism) runs serially instead of posting a second job to the busy pool, which
// would wait for itself.
thread_local bool inside_parallel_region = false;

// One job at a time: the chunks of a single parallel_for. Workers sleep until a job is posted,
// take chunks until none is left, then report done.
class Pool {
 public:
  explicit Pool(int threads) {
    for (int i = 1; i < threads; ++i) workers_.emplace_back([this] { work(); });
  }
  ~Pool() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    for (std::thread& t : workers_) t.join();
  }
  int size() const { return static_cast<int>(workers_.size()) + 1; }

  void run(int64_t n, int64_t chunk, const std::function<void(int64_t, int64_t)>& fn) {
    std::lock_guard<std::mutex> one_job(job_mutex_);  // kernels called from two user threads
    {
      std::lock_guard<std::mutex> lock(mutex_);
      fn_ = &fn;
      n_ = n;
      chunk_ = chunk;
      next_.store(0);
      open_ = true;
      ++generation_;
    }
    wake_.notify_all();
    take_chunks();
    // Close the job: a worker that wakes from now on finds it closed and goes back to sleep. Wait
    // only for the workers that joined in time, and they stop as soon as the chunks run out.
    std::unique_lock<std::mutex> lock(mutex_);
    open_ = false;
    done_.wait(lock, [&] { return active_ == 0; });
    fn_ = nullptr;
    if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
  }

 private:
  // A chunk that throws (a kernel's SG_CHECK) stops this thread's share; the first exception is
  // kept and rethrown by the caller once every thread has left the job.
  void take_chunks() {
    inside_parallel_region = true;
    try {
      for (int64_t lo = next_.fetch_add(chunk_); lo < n_; lo = next_.fetch_add(chunk_)) {
        (*fn_)(lo, std::min(n_, lo + chunk_));
      }
    } catch (...) {
      std::lock_guard<std::mutex> lock(error_mutex_);
      if (!error_) error_ = std::current_exception();
      next_.store(n_);  // the other threads stop at their next chunk
    }
    inside_parallel_region = false;
  }

  void work() {
    uint64_t seen = 0;
    while (true) {
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
        if (stop_) return;
        seen = generation_;
        if (!open_) continue;  // woke too late: the caller did it all
        ++active_;
      }
      take_chunks();
      {
        std::lock_guard<std::mutex> lock(mutex_);
        --active_;
      }
      done_.notify_one();
    }
  }

  std::vector<std::thread> workers_;
  std::mutex job_mutex_, mutex_, error_mutex_;
  std::exception_ptr error_;
  std::condition_variable wake_, done_;
  const std::function<void(int64_t, int64_t)>* fn_ = nullptr;
  int64_t n_ = 0, chunk_ = 1;
  std::atomic<int64_t> next_{0};
  int active_ = 0;  // workers inside the current job
  uint64_t generation_ = 0;
  bool open_ = false, stop_ = false;
};

int default_threads() {
  if (const char* env = std::getenv("SCRATCHGRAD_NUM_THREADS")) {
    const int n = std::atoi(env);
    if (n >= 1) return n;
  }
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

std::mutex pool_mutex;
int requested_threads = 0;  // 0: not set yet

Pool* pool() {
  // Created on first use and never destroyed: kernels may run from static destructors.
  static Pool* p = nullptr;
  std::lock_guard<std::mutex> lock(pool_mutex);
  if (requested_threads == 0) requested_threads = default_threads();
  if (p == nullptr || p->size() != requested_threads) {
    delete p;
    p = requested_threads > 1 ? new Pool(requested_threads) : nullptr;
  }
  return p;
}

}  // namespace

void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  grain = std::max<int64_t>(grain, 1);
  Pool* p = n >= 2 * grain && !inside_parallel_region ? pool() : nullptr;
  if (p == nullptr) return fn(0, n);
  // About four chunks per thread: enough to balance, few enough that each is worth its atomic.
  const int64_t chunk = std::max(grain, (n + 4 * p->size() - 1) / (4 * p->size()));
  p->run(n, chunk, fn);
}

int num_threads() {
  Pool* p = pool();
  return p == nullptr ? 1 : p->size();
}

void set_num_threads(int threads) {
  SG_CHECK(threads >= 1, "set_num_threads: threads must be >= 1, got {}", threads);
  std::lock_guard<std::mutex> lock(pool_mutex);
  requested_threads = threads;
}

Tensor rows_of(const Tensor& t, int64_t lo, int64_t hi) {
  auto impl = std::make_shared<TensorImpl>(*t.impl());
  impl->grad.reset();
  impl->grad_fn.reset();
  impl->requires_grad = false;
  if (t.size(0) == 1 || t.stride(0) == 0) {
    impl->strides[0] = 0;  // broadcast along dim 0: every row is the same row
  } else {
    impl->offset += lo * t.stride(0);
  }
  impl->shape[0] = hi - lo;
  return Tensor(std::move(impl));
}

}  // namespace sg::cpu
