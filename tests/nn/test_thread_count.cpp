// Training steps of a Transformer give the same bits with 1, 2 and 3 threads (docs/design.md,
// "Platforms": what is bit-exact). Every kernel that combines partial results cuts its work into
// blocks fixed by the shape (Note [Blocks fixed by the shape] in backend/cpu_fast/parallel.h), so
// this holds whatever OpenBLAS's kernels, on the fast kernels' AVX-512 paths and their portable
// ones alike. Three threads cut rows at places one and two never do.
#include <string>
#include <vector>

#include "autograd/backend/cpu_fast/parallel.h"
#include "autograd/cpu_features.h"
#include "nn/loss.h"
#include "nn/optim/adam.h"
#include "nn/transformer.h"
#include "tests/support/testing.h"

namespace sg::nn {
namespace {

// The loss of every step, then every parameter after the last one.
std::vector<std::vector<float>> train(const TransformerOptions& options, int64_t batch,
                                      int64_t length, int threads) {
  const int saved = cpu::num_threads();
  cpu::set_num_threads(threads);
  manual_seed(11);
  Transformer model(options);
  optim::Adam adam(model.parameters(), {.lr = 1e-3, .betas = {0.9, 0.98}, .eps = 1e-9});
  std::vector<std::vector<float>> results(1);
  for (int step = 0; step < 2; ++step) {
    Tensor src = randint(1, options.src_vocab, {batch, length});
    Tensor tgt = randint(1, options.tgt_vocab, {batch, length + 1});
    Tensor tgt_in = tgt.slice(1, 0, length), tgt_out = tgt.slice(1, 1, length + 1);
    Tensor loss = cross_entropy(model(src, tgt_in), tgt_out, options.pad_idx, 0.1);
    adam.zero_grad();
    loss.backward();
    adam.step();
    results[0].push_back(loss.item<float>());
  }
  for (const Tensor& p : model.parameters()) results.push_back(p.to_vector<float>());
  cpu::set_num_threads(saved);
  return results;
}

void expect_the_same_bits_at_any_thread_count(const TransformerOptions& options, int64_t batch,
                                              int64_t length) {
  for (const CpuFeatures features : {detected_cpu_features(), CpuFeatures::Avx2}) {
    CpuFeaturesGuard cap(features);
    SCOPED_TRACE(std::string("cpu features ") + std::string(cpu_features_name(cpu_features())));
    const auto one = train(options, batch, length, 1);
    for (const int threads : {2, 3}) {
      const auto several = train(options, batch, length, threads);
      ASSERT_EQ(several.size(), one.size());
      EXPECT_EQ(several[0], one[0]) << "losses with " << threads << " threads";
      for (size_t i = 1; i < one.size(); ++i) {
        EXPECT_EQ(several[i], one[i]) << "parameter " << i - 1 << " with " << threads << " threads";
      }
    }
  }
}

TransformerOptions model_options(int64_t d_model, int64_t heads, int64_t d_ff, int64_t vocab) {
  TransformerOptions o;
  o.src_vocab = o.tgt_vocab = vocab;
  o.d_model = d_model;
  o.heads = heads;
  o.num_encoder_layers = o.num_decoder_layers = 1;
  o.d_ff = d_ff;
  o.max_len = 64;
  o.dropout = 0.1;
  return o;
}

// The copy task's tiny model and batch: the narrow and register kernels, products split by rows.
TEST(ThreadCountTraining, TinyModelStepsAreTheSameBitsWithOneTwoAndThreeThreads) {
  expect_the_same_bits_at_any_thread_count(model_options(32, 4, 64, 11), 80, 10);
}

// Wider layers: products of 16 MFLOP and more ([512, 128]·[128, 512] and its gradients), cut
// into BLAS calls, and attention over 32 keys with heads of 32.
TEST(ThreadCountTraining, WideModelStepsAreTheSameBitsWithOneTwoAndThreeThreads) {
  expect_the_same_bits_at_any_thread_count(model_options(128, 4, 512, 300), 16, 32);
}

}  // namespace
}  // namespace sg::nn
