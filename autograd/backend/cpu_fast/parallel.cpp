#include "autograd/backend/cpu_fast/parallel.h"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <optional>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#if defined(__linux__)
#include <sched.h>
#endif

namespace sg::cpu {

namespace {

// True on a thread that is running chunks of a parallel_for: a kernel called from inside one
// (nested parallelism) runs serially instead of posting a second job to the busy pool, which
// would wait for itself.
thread_local bool inside_parallel_region = false;

inline void pause_briefly() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// `text` as a whole decimal number in [lo, hi], or nothing (blanks, a '+', trailing characters
// or a value out of range): how the environment's numbers are read.
std::optional<int64_t> whole_number_in(std::string_view text, int64_t lo, int64_t hi) {
  int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || value < lo || value > hi) {
    return std::nullopt;
  }
  return value;
}

// How long an idle worker watches for the next job before sleeping, in microseconds:
// SCRATCHGRAD_WATCH_US, 100 by default, several times the gap between the jobs of a tiny
// training step (bench/NOTES.md); 0 turns watching off. At most a second: a watching worker
// keeps its core busy.
int64_t watch_microseconds() {
  const char* env = std::getenv("SCRATCHGRAD_WATCH_US");
  if (env == nullptr || *env == '\0') return 100;
  const std::optional<int64_t> us = whole_number_in(env, 0, 1000000);
  SG_CHECK(us.has_value(),
           "SCRATCHGRAD_WATCH_US: expected whole microseconds from 0 to 1000000, got '{}'", env);
  return *us;
}

// One job at a time: the chunks of a single parallel_for. Chunk k of `chunks` covers rows
// [n·k/chunks, n·(k+1)/chunks), and thread t (the caller is 0) owns the chunks
// [chunks·t/T, chunks·(t+1)/T): the same rows of every tensor of the same length, kernel after
// kernel, so a thread mostly reads what it wrote itself, in its own core's cache (moving a
// [400, 32] block between cores costs about as much as multiplying it). A thread that finishes
// its own chunks takes the others' from their far end; a worker that has not woken costs nothing.
class Pool {
 public:
  // With more threads than CPUs, a worker watching for the next job holds a CPU that a thread
  // with work needs (256 threads on 2 CPUs made a step 500 times slower): watchers yield theirs.
  explicit Pool(int threads)
      : ranges_(static_cast<size_t>(threads)), oversubscribed_(threads > available_cpus()) {
    try {
      for (int i = 1; i < threads; ++i) workers_.emplace_back([this, i] { work(i); });
    } catch (const std::system_error& e) {
      // Out of threads or memory: stop the workers already started (a joinable std::thread left
      // to its destructor would end the program) and say what to change.
      const size_t started = workers_.size();
      stop_workers();
      SG_FAIL(
          "parallel: cannot start thread {} of {} ({}); ask for fewer with "
          "set_num_threads or SCRATCHGRAD_NUM_THREADS",
          started + 2, threads, e.what());
    }
  }
  ~Pool() { stop_workers(); }
  int size() const { return static_cast<int>(ranges_.size()); }

  void run(int64_t n, int64_t chunks, const std::function<void(int64_t, int64_t)>& fn) {
    std::lock_guard<std::mutex> one_job(job_mutex_);  // kernels called from two user threads
    {
      std::lock_guard<std::mutex> lock(mutex_);
      fn_ = &fn;
      n_ = n;
      chunks_ = chunks;
      const int64_t threads = size();
      for (int64_t t = 0; t < threads; ++t) {
        ranges_[t].set(chunks * t / threads, chunks * (t + 1) / threads);
      }
      open_ = true;
      quiet_.store(false);
      generation_.fetch_add(1);
    }
    wake_.notify_all();  // no system call when every worker is still watching (below)
    take_chunks(0);
    // Close the job: a worker that wakes from now on finds it closed and goes back to sleep. Wait
    // only for the workers that joined in time, and they stop as soon as the chunks run out:
    // watch for that first (a worker is usually inside its last chunk), sleep only if it lasts.
    std::unique_lock<std::mutex> lock(mutex_);
    open_ = false;
    if (active_.load() > 0) {
      lock.unlock();
      watch_for([&] { return active_.load() == 0; });
      lock.lock();
    }
    done_.wait(lock, [&] { return active_.load() == 0; });
    fn_ = nullptr;
    if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
  }

  // Idle workers stop watching and sleep until the next job (before OpenBLAS's own threads run).
  void quiet() { quiet_.store(true); }

 private:
  // The chunks [front, back) of one thread not taken yet, as one atomic word: the owner takes
  // from the front, others from the back.
  struct alignas(64) Range {
    std::atomic<uint64_t> bounds{0};
    static uint64_t pack(int64_t front, int64_t back) {
      return static_cast<uint64_t>(front) << 32 | static_cast<uint64_t>(back);
    }
    void set(int64_t front, int64_t back) { bounds.store(pack(front, back)); }
    // Claims one chunk from the front (or the back); -1 when none is left.
    int64_t take(bool from_front) {
      uint64_t b = bounds.load();
      while (true) {
        const int64_t front = static_cast<int64_t>(b >> 32),
                      back = static_cast<int64_t>(b & 0xffffffffu);
        if (front >= back) return -1;
        const uint64_t next = from_front ? pack(front + 1, back) : pack(front, back - 1);
        if (bounds.compare_exchange_weak(b, next)) return from_front ? front : back - 1;
      }
    }
  };

  // A chunk that throws (a kernel's SG_CHECK) stops this thread's share; the first exception is
  // kept and rethrown by the caller once every thread has left the job.
  void take_chunks(int self) {
    inside_parallel_region = true;
    const int threads = size();
    try {
      for (int i = 0; i < threads; ++i) {
        Range& range = ranges_[static_cast<size_t>((self + i) % threads)];
        for (int64_t k = range.take(i == 0); k >= 0; k = range.take(i == 0)) {
          (*fn_)(n_ * k / chunks_, n_ * (k + 1) / chunks_);
        }
      }
    } catch (...) {
      std::lock_guard<std::mutex> lock(error_mutex_);
      if (!error_) error_ = std::current_exception();
      for (Range& range : ranges_) range.set(0, 0);  // the other threads stop at their next chunk
    }
    inside_parallel_region = false;
  }

  void work(int self) {
    uint64_t seen = 0;
    while (true) {
      // Kernels come in bursts (a training step is hundreds of them, microseconds apart), and
      // waking from the condition variable takes longer than many of them: watch for the next
      // job for a while before going to sleep.
      watch_for([&] { return generation_.load() != seen || quiet_.load(); });
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [&] { return stop_ || generation_.load() != seen; });
        if (stop_) return;
        seen = generation_.load();
        if (!open_) continue;  // woke too late: the caller did it all
        active_.fetch_add(1);
      }
      take_chunks(self);
      {
        std::lock_guard<std::mutex> lock(mutex_);
        active_.fetch_sub(1);
      }
      done_.notify_one();
    }
  }

  void stop_workers() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    for (std::thread& t : workers_) t.join();
  }

  // Polls `ready` for up to watch_ (a pause between polls, so the sibling hyperthread keeps its
  // share); true if it became true in that time.
  template <typename Ready>
  bool watch_for(Ready ready) const {
    if (watch_.count() <= 0) return ready();
    const auto deadline = std::chrono::steady_clock::now() + watch_;
    do {
      for (int i = 0; i < 64; ++i) {
        if (ready()) return true;
        if (oversubscribed_) {
          std::this_thread::yield();
        } else {
          pause_briefly();
        }
      }
    } while (std::chrono::steady_clock::now() < deadline);
    return ready();
  }

  std::vector<Range> ranges_;  // one per thread, the caller's first
  std::vector<std::thread> workers_;
  std::mutex job_mutex_, mutex_, error_mutex_;
  std::exception_ptr error_;
  std::condition_variable wake_, done_;
  const std::function<void(int64_t, int64_t)>* fn_ = nullptr;
  int64_t n_ = 0, chunks_ = 1;
  // Workers inside the current job: changed under mutex_ (for done_), read without it too.
  std::atomic<int> active_{0};
  std::atomic<uint64_t> generation_{0};  // jobs posted so far
  std::atomic<bool> quiet_{false};
  std::chrono::microseconds watch_{watch_microseconds()};
  bool oversubscribed_;
  bool open_ = false, stop_ = false;
};

}  // namespace

// A container or `taskset` may give the process fewer CPUs than the machine has.
int available_cpus() {
#if defined(__linux__)
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
#endif
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

int default_num_threads() {
  const char* env = std::getenv("SCRATCHGRAD_NUM_THREADS");
  if (env != nullptr && *env != '\0') return parse_thread_count(env, "SCRATCHGRAD_NUM_THREADS");
  return std::clamp(available_cpus(), 1, kMaxThreads);
}

namespace {

std::mutex pool_mutex;
int requested_threads = 0;     // 0: not set yet
Pool* current_pool = nullptr;  // created on first use

Pool* pool() {
  // Created on first use and never destroyed: kernels may run from static destructors.
  std::lock_guard<std::mutex> lock(pool_mutex);
  if (requested_threads == 0) requested_threads = default_num_threads();
  Pool*& p = current_pool;
  if (p == nullptr || p->size() != requested_threads) {
    delete p;
    p = nullptr;  // a Pool that fails to start leaves none behind, and the next call tries again
    if (requested_threads > 1) p = new Pool(requested_threads);
  }
  return p;
}

}  // namespace

void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn,
                  int64_t chunks_per_thread) {
  if (n <= 0) return;
  grain = std::max<int64_t>(grain, 1);
  Pool* p = n >= 2 * grain && !inside_parallel_region ? pool() : nullptr;
  if (p == nullptr) return fn(0, n);
  // Up to chunks_per_thread chunks per thread, a multiple of the thread count, so that thread t's
  // share is the same rows [n·t/T, n·(t+1)/T) whatever the grain. Never more chunks than grains:
  // with more threads than that (3 rows of a layer_norm on 16 cores), some threads get none, and no
  // chunk is empty.
  const int64_t threads = p->size(), grains = n / grain;
  const int64_t per_thread =
      std::clamp<int64_t>(grains / threads, 1, std::max<int64_t>(chunks_per_thread, 1));
  p->run(n, grains < threads ? grains : per_thread * threads, fn);
}

int64_t fixed_blocks(double work, double min_block) {
  const double wanted = work / std::max(min_block, 1.0);
  int64_t blocks = 1;
  while (blocks * 2 <= kMaxBlocks && static_cast<double>(blocks * 2) <= wanted) blocks *= 2;
  return blocks;
}

void quiet_workers() {
  std::lock_guard<std::mutex> lock(pool_mutex);
  if (current_pool != nullptr) current_pool->quiet();
}

int num_threads() {
  Pool* p = pool();
  return p == nullptr ? 1 : p->size();
}

int parse_thread_count(std::string_view text, std::string_view source) {
  const std::optional<int64_t> threads = whole_number_in(text, 1, kMaxThreads);
  SG_CHECK(threads.has_value(), "{}: expected a whole number of threads from 1 to {}, got '{}'",
           source, kMaxThreads, text);
  return static_cast<int>(*threads);
}

void set_num_threads(int threads) {
  SG_CHECK(threads >= 1 && threads <= kMaxThreads,
           "set_num_threads: threads must be from 1 to {}, got {}", kMaxThreads, threads);
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
