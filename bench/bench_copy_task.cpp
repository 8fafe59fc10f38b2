// The copy-task Transformer, timed: the scratchgrad side of run_copy_task_bench.sh (the PyTorch
// side is torch_copy_task.py, the same model step by step). One configuration per process, so
// that the peak RSS it reports belongs to that configuration alone.
//
//   bench_copy_task --config tiny        # median ms per training step (forward+backward+Adam)
//   bench_copy_task --config decode      # greedy decoding of 100 tiny sequences (KV cache)
//   bench_copy_task --config medium --profile --svg medium.svg   # time per op, as a table and SVG
//   bench_copy_task --config annotated --bf16   # forward and loss under sg::AutocastGuard
//
// A training step is the trainer's (examples/copy_task/trainer.cpp): a fresh batch from the task
// generator, teacher forcing, cross-entropy ignoring padding, backward, the Noam learning rate,
// Adam (betas 0.9/0.98, eps 1e-9), and reading the loss back (loss.item()); zero_grad comes first
// in the step (before the forward, as on the PyTorch side), which keeps peak memory lower.
// Warm-up steps run first (allocator, OpenBLAS threads, caches); then each timed step is measured
// alone and the median is reported. The model is untrained: the speed of a step does not depend
// on the weights, and greedy decoding always runs its full length.
#include <fmt/format.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "autograd/autograd.h"
#include "autograd/backend/cpu_fast/caching_allocator.h"  // memory_stats(): what it holds
#include "autograd/backend/cpu_fast/parallel.h"
#include "autograd/profiler.h"
#include "config.h"
#include "decoding.h"
#include "nn/nn.h"
#include "profile_report.h"
#include "tasks.h"
#include "timing.h"

namespace {

using copy_task::Config;
using sg::bench::Clock;
using sg::bench::ms_since;

struct Options {
  std::string config = "tiny";  // tiny | annotated | medium | decode
  int steps = 0;                // timed steps (0: a default per config)
  int warmup = -1;              // untimed steps first (-1: a default per config)
  int threads = 2;              // the pool's and OpenBLAS's, as torch.set_num_threads(2) there
  std::string json_path, svg_path;
  bool profile = false;
  bool bf16 = false;  // mixed precision: bfloat16 products (autograd/autocast.h)
};

[[noreturn]] void usage(const char* argv0) {
  fmt::print(stderr,
             "usage: {} [--config tiny|annotated|medium|decode] [--steps N] [--warmup N] "
             "[--threads N] [--json FILE] [--profile] [--svg FILE] [--bf16]\n",
             argv0);
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (arg == "--config" && has_value) {
      o.config = argv[++i];
    } else if (arg == "--steps" && has_value) {
      o.steps = std::stoi(argv[++i]);
    } else if (arg == "--warmup" && has_value) {
      o.warmup = std::stoi(argv[++i]);
    } else if (arg == "--threads" && has_value) {
      o.threads = std::stoi(argv[++i]);
    } else if (arg == "--json" && has_value) {
      o.json_path = argv[++i];
    } else if (arg == "--svg" && has_value) {
      o.svg_path = argv[++i];
      o.profile = true;
    } else if (arg == "--profile") {
      o.profile = true;
    } else if (arg == "--bf16") {
      o.bf16 = true;
    } else {
      usage(argv[0]);
    }
  }
  if (o.config != "tiny" && o.config != "annotated" && o.config != "medium" &&
      o.config != "decode") {
    usage(argv[0]);
  }
  const bool big = o.config == "annotated" || o.config == "medium";
  if (o.steps <= 0) o.steps = big ? 10 : 40;
  if (o.warmup < 0) o.warmup = big ? 2 : 10;
  return o;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// CPU time of the whole process (every thread), in ms: less sensitive than wall time to other work
// on the machine, though a busy neighbour still slows caches and shared cores.
double cpu_ms() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  auto ms = [](const timeval& t) { return t.tv_sec * 1e3 + t.tv_usec * 1e-3; };
  return ms(usage.ru_utime) + ms(usage.ru_stime);
}

double peak_rss_mib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
#if defined(__APPLE__)
  return static_cast<double>(usage.ru_maxrss) / (1024.0 * 1024.0);  // bytes on macOS
#else
  return static_cast<double>(usage.ru_maxrss) / 1024.0;  // KiB on Linux
#endif
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  }
  return "unknown";
}

// The trainer's step, with the profiler's phases marked (free when profiling is off).
struct Trainer {
  Config config;
  bool bf16;
  sg::nn::Transformer model;
  sg::optim::Adam optimizer;
  sg::optim::NoamLR schedule;  // as the trainer: the library's Noam schedule on a base lr of 1
  copy_task::TaskGenerator data;

  Trainer(const Config& c, bool bfloat16)
      : config(c),
        bf16(bfloat16),
        model((sg::manual_seed(c.seed), c.model_options())),
        optimizer(model.parameters(),
                  sg::optim::AdamOptions{.lr = 1.0, .betas = {c.beta1, c.beta2}, .eps = c.eps}),
        schedule(optimizer, c.d_model, c.warmup, c.lr_factor),
        data(c.task_kind(), c.vocab, c.min_len, c.length, c.seed ^ 0x1000) {
    model.train();
  }

  double run_step() {
    namespace prof = sg::profiler;
    sg::Tensor loss;
    // Gradients are cleared (freed: set_to_none) before the forward rather than after it, so that
    // last step's gradients do not sit in memory through this step's forward.
    optimizer.zero_grad();
    {
      prof::Phase phase("forward");
      const sg::AutocastGuard autocast(sg::kBFloat16, bf16);  // the forward and the loss
      copy_task::Batch batch = data.next(config.batch);
      const int64_t L = batch.tgt.size(1);
      sg::Tensor logits = model.forward(batch.src, batch.tgt.narrow(1, 0, L - 1));
      sg::Tensor labels = batch.tgt.narrow(1, 1, L - 1).reshape({-1});
      loss = sg::nn::cross_entropy(logits.reshape({-1, config.vocab}), labels, copy_task::kPad,
                                   config.label_smoothing);
    }
    {
      prof::Phase phase("backward");
      loss.backward();
    }
    {
      prof::Phase phase("optimizer");
      optimizer.step();
      schedule.step();
    }
    prof::Phase phase("loss.item");
    return loss.item<double>();
  }
};

struct Result {
  double median_ms = 0, min_ms = 0, cpu_ms_per_run = 0;
  std::vector<double> samples;
  double last_loss = 0;
};

Result bench_training(const Options& o, const Config& config) {
  Trainer trainer(config, o.bf16);
  for (int i = 0; i < o.warmup; ++i) trainer.run_step();
  Result r;
  const double cpu0 = cpu_ms();
  for (int i = 0; i < o.steps; ++i) {
    const auto t0 = Clock::now();
    r.last_loss = trainer.run_step();
    r.samples.push_back(ms_since(t0));
  }
  r.cpu_ms_per_run = (cpu_ms() - cpu0) / o.steps;
  if (o.profile) {
    sg::profiler::reset();
    sg::profiler::set_enabled(true);
    for (int i = 0; i < o.steps; ++i) trainer.run_step();
    sg::profiler::set_enabled(false);
  }
  return r;
}

Result bench_decode(const Options& o, const Config& config) {
  sg::manual_seed(config.seed);
  sg::nn::Transformer model(config.model_options());
  model.eval();
  copy_task::TaskGenerator data(config.task_kind(), config.vocab, config.min_len, config.length, 7);
  const sg::Tensor src = data.next(100).src;
  const sg::AutocastGuard autocast(sg::kBFloat16, o.bf16);  // the products of decoding
  Result r;
  double cpu0 = cpu_ms();
  for (int i = 0; i < o.warmup + o.steps; ++i) {
    if (i == o.warmup) cpu0 = cpu_ms();
    const auto t0 = Clock::now();
    auto out = copy_task::greedy_decode(model, src, config.length, /*use_cache=*/true);
    if (i >= o.warmup) r.samples.push_back(ms_since(t0));
    r.last_loss = static_cast<double>(out.back().back());  // keep the result alive
  }
  r.cpu_ms_per_run = (cpu_ms() - cpu0) / o.steps;
  if (o.profile) {
    sg::profiler::reset();
    sg::profiler::set_enabled(true);
    for (int i = 0; i < o.steps; ++i) {
      sg::profiler::Phase phase("decode");
      copy_task::greedy_decode(model, src, config.length, /*use_cache=*/true);
    }
    sg::profiler::set_enabled(false);
  }
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  sg::choose_fast_blas_once();  // before the kernels are named (autograd/blas.h)
  const Options o = parse(argc, argv);
  sg::set_blas_threads(o.threads);
  sg::cpu::set_num_threads(o.threads);  // the fast kernels' own pool
  const bool decode = o.config == "decode";
  const Config config = Config::preset_named(decode ? "tiny" : o.config);

  Result r = decode ? bench_decode(o, config) : bench_training(o, config);
  r.median_ms = median(r.samples);
  r.min_ms = *std::min_element(r.samples.begin(), r.samples.end());
  const double rss = peak_rss_mib();

  const std::string what = std::string(decode ? "greedy decode of 100 tiny sequences (KV cache)"
                                              : "training step (forward + backward + Adam)") +
                           (o.bf16 ? ", bfloat16 autocast" : "");
  const sg::cpu::MemoryStats mem = sg::cpu::memory_stats();
  const double mib = 1024.0 * 1024.0;
  fmt::print(
      "scratchgrad {}: {}: median {:.2f} ms, min {:.2f} ms over {} runs ({:.2f} ms CPU per run); "
      "peak RSS {:.0f} MiB (tensors at most {:.0f} MiB, {:.0f} MiB kept for reuse at the end)\n",
      o.config, what, r.median_ms, r.min_ms, r.samples.size(), r.cpu_ms_per_run, rss,
      static_cast<double>(mem.peak_live_bytes) / mib, static_cast<double>(mem.cached_bytes) / mib);
  if (o.profile) {
    const auto stats = sg::profiler::op_stats();
    fmt::print("\n{}", profile_table(stats, sg::profiler::phase_stats(), o.steps));
    if (!o.svg_path.empty()) {
      std::ofstream(o.svg_path) << profile_svg(
          stats, o.steps,
          fmt::format("scratchgrad {}: time per op per {}", o.config,
                      decode ? "decode of 100 sequences" : "training step"));
      fmt::print("chart: {}\n", o.svg_path);
    }
  }
  const ProductStats products =
      o.profile ? product_stats(sg::profiler::op_stats(), o.steps) : ProductStats{};
  if (!o.json_path.empty()) {
    std::ofstream out(o.json_path);
    out << fmt::format(
        R"({{"framework":"scratchgrad","config":"{}","what":"{}","median_ms":{:.4f},"min_ms":{:.4f},)"
        R"("runs":{},"samples_ms":[{:.4f}],"cpu_ms_per_run":{:.4f},"peak_rss_mib":{:.1f},)"
        R"("peak_tensor_mib":{:.1f},"threads":{},"blas":"{}","blas_core":"{}",)"
        R"("cpu":"{}","hardware_threads":{},"product_gflop_per_step":{:.4f},)"
        R"("product_ms_per_step":{:.4f},"autocast":{}}})"
        "\n",
        o.config, what, r.median_ms, r.min_ms, r.samples.size(), fmt::join(r.samples, ","),
        r.cpu_ms_per_run, rss, static_cast<double>(mem.peak_live_bytes) / mib, o.threads,
        sg::blas_library_name(), sg::blas_core_name(), cpu_model(),
        std::thread::hardware_concurrency(), products.gflop_per_step, products.ms_per_step, o.bf16);
  }
  return 0;
}
