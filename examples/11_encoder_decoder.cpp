// Chapter 11: the encoder-decoder Transformer.
//
// The encoder reads the whole source (self-attention with a padding mask) into a memory
// [B, S, D]. The decoder reads the target so far (masked self-attention: position t sees 0..t),
// then looks at the memory (cross-attention: queries from the target, keys and values from the
// source), and a final Linear, the generator, turns each position into vocabulary logits.
// Training uses teacher forcing: the input is the target shifted right, the label is the target.
//
// Run: ./build/examples/11_encoder_decoder [--quick]   Test: ctest --test-dir build -L ch11
#include <fmt/format.h>

#include "example_args.h"
#include "nn/nn.h"

namespace {

int failures = 0;

void check(bool ok, const char* what) {
  fmt::print("  [{}] {}\n", ok ? "ok" : "FAILED", what);
  failures += ok ? 0 : 1;
}

double max_diff(const sg::Tensor& a, const sg::Tensor& b) {
  return (a - b).abs().max().item<double>();
}

// Copy-task batch: [1, random tokens 2..V-1, ...] of random lengths 3..L, padded with 0.
sg::Tensor copy_batch(int64_t batch, int64_t L, int64_t vocab) {
  sg::Tensor positions = sg::arange(L).view({1, L});
  sg::Tensor tokens = sg::randint(2, vocab, {batch, L});
  tokens = sg::where(positions == 0, sg::scalar_tensor(1, sg::kInt64), tokens);  // start symbol
  sg::Tensor padding = positions >= sg::randint(3, L + 1, {batch, 1});
  return sg::where(padding, sg::scalar_tensor(0, sg::kInt64), tokens);
}

// Section 5, a function of its own that main() calls after the others, with their model.
void a_few_training_steps(sg::nn::Transformer& model, const sg::nn::TransformerOptions& o,
                          bool quick) {
  fmt::print("\n== 5. A few training steps on the copy task (the full run: examples/copy_task)\n");
  model.train();
  sg::optim::Adam opt(model.parameters(), {.lr = 1.0, .betas = {0.9, 0.98}, .eps = 1e-9});
  sg::optim::NoamLR schedule(opt, o.d_model, /*warmup=*/50, /*factor=*/0.5);
  const int steps = quick ? 60 : 300;
  std::vector<double> losses;
  for (int step = 1; step <= steps; ++step) {
    sg::Tensor tgt = copy_batch(32, 10, o.tgt_vocab);  // the target is the source itself
    opt.zero_grad();
    sg::Tensor prediction =
        model(tgt, tgt.narrow(1, 0, 9));  // teacher forcing: input shifted right
    sg::Tensor loss = sg::nn::cross_entropy(prediction, tgt.narrow(1, 1, 9), o.pad_idx);
    loss.backward();
    sg::optim::clip_grad_norm_(model.parameters(), 1.0);
    opt.step();
    schedule.step();
    losses.push_back(loss.item<double>());
    if (step % (steps / 6) == 0)
      fmt::print("  step {:>3}: loss {:.3f}  lr {:.2e}\n", step, losses.back(), opt.lr());
  }
  auto mean_of = [&](size_t from, size_t n) {
    double s = 0;
    for (size_t i = from; i < from + n; ++i) s += losses[i];
    return s / static_cast<double>(n);
  };
  const double first = mean_of(0, 10), last = mean_of(losses.size() - 10, 10);
  fmt::print("  mean loss of the first 10 steps {:.3f}, of the last 10 {:.3f}  (ln 10 = 2.303)\n",
             first, last);
  check(last < 0.75 * first, "the loss goes down");
}

}  // namespace

int main(int argc, char** argv) {
  const bool quick = example::parse_args(argc, argv).quick;
  sg::manual_seed(0);

  fmt::print("== 1. A small Transformer: 2 encoder and 2 decoder layers, d_model 32\n");
  sg::nn::TransformerOptions o;
  o.src_vocab = o.tgt_vocab = 10;
  o.d_model = 32;
  o.heads = 4;
  o.num_encoder_layers = o.num_decoder_layers = 2;
  o.d_ff = 64;
  o.dropout = 0.1;
  sg::nn::Transformer model(o);
  fmt::print("  options: {}\n  {} parameters; the top level and decoder layer 1's weights:\n",
             o.to_string(), model.num_parameters());
  for (const auto& [name, p] : model.named_parameters()) {
    const bool layer1 = name.starts_with("decoder.layers.1.") && name.ends_with("weight");
    if (name.find("layers.") == std::string::npos || layer1)
      fmt::print("    {:<40} {}\n", name, fmt::format("{}", p.shape()));
  }

  fmt::print("\n== 2. The tutorial's shape check: out = model(x, trg[:, :-1])\n");
  model.eval();  // no dropout: the checks below compare outputs exactly
  sg::Tensor x = sg::tensor({{1, 5, 6, 4, 3, 9, 5, 2, 0}, {1, 8, 7, 3, 4, 5, 6, 7, 2}}, sg::kInt64);
  sg::Tensor trg = sg::tensor({{1, 7, 4, 3, 5, 9, 2, 0}, {1, 5, 6, 2, 4, 7, 6, 2}}, sg::kInt64);
  sg::Tensor tgt_in = trg.narrow(1, 0, 7);  // trg[:, :-1]: the decoder input
  sg::Tensor out = model(x, tgt_in);
  fmt::print("  x {}, trg[:, :-1] {} -> out {}\n", x.shape(), tgt_in.shape(), out.shape());
  check(out.shape() == sg::Shape({2, 7, 10}), "(2, 7, 10): batch, target positions, vocabulary");

  fmt::print("\n== 3. The same forward, one stage at a time\n");
  sg::Tensor src_mask = model.source_mask(x), tgt_mask = model.target_mask(tgt_in);
  fmt::print("  source_mask(x)      {}  padding: x[0, 8] is 0\n", src_mask.shape());
  fmt::print("  target_mask(tgt_in) {}  padding AND causal; for sequence 0:\n{}\n",
             tgt_mask.shape(), tgt_mask.select(0, 0).select(0, 0));
  sg::Tensor memory = model.encode(x, src_mask);
  sg::Tensor logits = model.decode(tgt_in, memory, src_mask, tgt_mask);
  fmt::print("  embed_source(x) {} -> encoder -> memory {}\n", model.embed_source(x).shape(),
             memory.shape());
  fmt::print("  embed_target(tgt_in) {} -> decoder(., memory) -> generator -> {}\n",
             model.embed_target(tgt_in).shape(), logits.shape());
  check(max_diff(logits, out) == 0.0, "encode + decode is exactly forward");
  sg::Tensor cross = model.decoder->layers->at<sg::nn::DecoderLayer>(0)->last_cross_attention;
  fmt::print("  cross-attention weights of decoder layer 0: {} = [B, H, T, S]\n", cross.shape());
  check(cross.select(0, 0).narrow(2, 8, 1).abs().max().item<double>() == 0.0,
        "no target position of sequence 0 attends to its source padding x[0, 8]");
  sg::Tensor longer = sg::cat({x, sg::zeros({2, 3}, sg::kInt64)}, 1);  // 3 more pad tokens
  check(max_diff(model(longer, tgt_in), out) < 1e-5, "more source padding: the same logits");

  fmt::print("\n== 4. The causal property: the future cannot change the past\n");
  sg::Tensor changed = tgt_in.clone();
  changed.select(0, 0).select(0, 4).fill_(8);  // sequence 0, position 4: token 5 -> 8
  sg::Tensor out2 = model(x, changed);
  const double past = max_diff(out2.narrow(1, 0, 4), out.narrow(1, 0, 4));
  const double future = max_diff(out2.narrow(1, 4, 3), out.narrow(1, 4, 3));
  fmt::print("  changed tgt_in[0, 4]: logits 0..3 moved by {:.1e}, logits 4..6 by {:.3f}\n", past,
             future);
  check(past == 0.0, "positions before the change are bit-for-bit the same");
  check(future > 1e-3, "positions from the change on do see it");

  a_few_training_steps(model, o, quick);

  fmt::print("\n{}\n", failures == 0 ? "All checks passed." : "Some checks FAILED.");
  return failures == 0 ? 0 : 1;
}
