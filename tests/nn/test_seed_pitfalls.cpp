// Bugs found in the tutorial texts the chapters follow (Chinese blog posts with PyTorch code)
// around attention and the Transformer. Each test fails if our code made the seed's mistake.
#include <cmath>
#include <vector>

#include "nn/transformer.h"
#include "tests/nn/golden_parameters.h"
#include "tests/support/testing.h"

namespace sg::nn {
namespace {

using sg::testing::golden;
using sg::testing::load_golden_parameters;
using sg::testing::tensors_equal;
using sg::testing::tensors_near;

TransformerOptions small_options(bool norm_first) {
  TransformerOptions o;
  o.src_vocab = 11;
  o.tgt_vocab = 7;
  o.d_model = 8;
  o.heads = 4;
  o.num_encoder_layers = o.num_decoder_layers = 1;
  o.d_ff = 16;
  o.max_len = 6;
  o.dropout = 0.0;
  o.norm_first = norm_first;
  return o;
}

// The attention weights of one head, computed by hand from the projections with a given scale.
Tensor head_weights(MultiheadAttention& mha, const Tensor& x, int64_t head, double scale) {
  Tensor q = mha.w_q->forward(x).narrow(-1, head * mha.head_dim, mha.head_dim);
  Tensor k = mha.w_k->forward(x).narrow(-1, head * mha.head_dim, mha.head_dim);
  return softmax(matmul(q, k.transpose(-2, -1)) / scale, -1);
}

// ---- 000_14211caae19d97e7.txt: MultiHeadAttention.forward takes `seq_len` from q.size() and
// views k and v with it, so cross-attention (S != T keys) breaks.
TEST(SeedPitfall000, CrossAttentionSplitsKeysWithTheirOwnLength) {
  const auto& c = golden("nn_attention", "mha_four_heads_cross");  // T = 2 queries, S = 7 keys
  MultiheadAttention mha(12, 4);
  load_golden_parameters(mha, c);
  Tensor key = c.input("key");
  AttentionOutput a = mha(c.input("query"), key, key, c.input("mask"));
  EXPECT_EQ(a.weights.shape(), (Shape{3, 4, 2, 7}));
  EXPECT_TRUE(tensors_near(a.output, c.output("out"), 1e-5, 1e-4));
}

// ---- 002_9c392148fc43a2ad.txt, selfattention: softmax(energy / embed_size**(1/2)) scales by
// √d_model. The paper (and its own formula) divide by √d_k, the size of ONE head.
TEST(SeedPitfall002, ScoresAreScaledByTheHeadSizeNotDModel) {
  MultiheadAttention mha(8, 4);  // head_dim 2: √2 versus √8
  Tensor x = randn({1, 5, 8}) * 3.0;
  AttentionOutput a = mha(x, x, x);
  for (int64_t h = 0; h < 4; ++h) {
    Tensor ours = a.weights.select(1, h);
    EXPECT_TRUE(tensors_near(ours, head_weights(mha, x, h, std::sqrt(2.0)), 1e-5, 1e-4));
    EXPECT_FALSE(tensors_near(ours, head_weights(mha, x, h, std::sqrt(8.0)), 1e-3, 1e-3));
  }
}

// ---- 002, selfattention: the queries/keys/values Linears are [head_dim, head_dim] and applied
// after reshaping into heads, so head h only ever sees its own slice of the embedding. In the
// paper each head projects the WHOLE d_model vector.
TEST(SeedPitfall002, EveryHeadSeesTheWholeEmbedding) {
  MultiheadAttention mha(8, 2);
  Tensor x = randn({1, 4, 8});
  Tensor x2 = x.clone();
  {
    NoGradGuard no_grad;
    x2.narrow(2, 4, 4).mul_(3.0);  // change only features 4..7 (head 1's slice)
  }
  EXPECT_EQ(mha.w_q->weight.shape(), (Shape{8, 8}));
  // Head 0's attention pattern changes too.
  EXPECT_FALSE(
      tensors_near(mha(x2, x2, x2).weights.select(1, 0), mha(x, x, x).weights.select(1, 0), 1e-4));
}

// ---- 002, Decoder.forward: `self.position_embeddimg(x)` looks the position table up with the
// TOKEN IDS instead of the positions it had just built (and crashes once an id >= max_len).
TEST(SeedPitfall002, PositionEmbeddingIsIndexedByPositionNotTokenId) {
  TransformerOptions o = small_options(false);
  o.positional = "learned";
  Transformer model(o);
  Tensor tgt = from_vector<int64_t>({3, 3, 1, 6}, {1, 4});  // id 6 >= max_len 6; ids != positions
  Tensor expected = model.tgt_embed->forward(tgt) * std::sqrt(8.0) +
                    model.tgt_pos->parameters()[0].narrow(0, 0, 4);
  EXPECT_TRUE(tensors_near(model.embed_target(tgt), expected, 1e-6));
  // The same token at positions 0 and 1 gets different inputs.
  Tensor e = model.embed_target(tgt);
  EXPECT_FALSE(tensors_near(e.select(1, 0), e.select(1, 1), 1e-4));
}

// ---- 002, TransformerBlock / DecoderBlock: `self.dropout(self.norm1(query + attention))` drops
// the normalised RESIDUAL STREAM. Dropout belongs on the sublayer output before the residual sum,
// LayerNorm(x + Dropout(Sublayer(x))). With p = 1 every sublayer contributes nothing, so a
// post-LN layer must reduce to its LayerNorms applied to x (the seed's order gives zeros).
TEST(SeedPitfall002, DropoutHitsTheSublayerOutputNotTheResidual) {
  TransformerOptions o = small_options(false);
  EncoderLayer enc(o);
  enc.dropout1->p = enc.dropout2->p = 1.0;
  enc.train();
  Tensor x = randn({2, 3, 8});
  EXPECT_TRUE(tensors_near(enc(x), enc.norm2->forward(enc.norm1->forward(x)), 1e-5));
  DecoderLayer dec(o);
  dec.dropout1->p = dec.dropout2->p = dec.dropout3->p = 1.0;
  dec.train();
  Tensor expected = dec.norm3->forward(dec.norm2->forward(dec.norm1->forward(x)));
  EXPECT_TRUE(tensors_near(dec(x, randn({2, 4, 8})), expected, 1e-5));
}

// ---- 002, comments "trg_vocab_size: 目标句子的长度" / "src_vocab_size = 10 # 输入句子的长度" call
// the vocabulary sizes sentence lengths (its demo uses 10 for both, hiding it). The logits are
// [B, T, tgt_vocab]: T is the target length, the last dim the target vocabulary.
TEST(SeedPitfall002, LogitsAreBatchByTargetLengthByTargetVocab) {
  Transformer model(small_options(false));  // src_vocab 11, tgt_vocab 7
  Tensor src = from_vector<int64_t>({1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, {2, 5});
  Tensor tgt = from_vector<int64_t>({1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_EQ(model(src, tgt).shape(), (Shape{2, 3, 7}));
}

// ---- 003_95e50e511b1777e1.txt: its masks are True = MASKED (np.where(mask, -1e9, scores)),
// the opposite of 000/002/004 (mask == 0 is masked) and of ours (True = may attend). A flipped
// convention would make the first query attend to everything but itself.
TEST(SeedPitfall003, MaskTrueMeansMayAttend) {
  Tensor x = randn({1, 1, 3, 4});  // [B, H, T, Dh]
  AttentionOutput a = scaled_dot_product_attention(x, x, x, make_causal_mask(3));
  EXPECT_TRUE(tensors_near(a.weights.view({3, 3}).select(0, 0), tensor({1.0, 0.0, 0.0}), 1e-7));
  EXPECT_TRUE(tensors_near(a.output.view({3, 4}).select(0, 0), x.view({3, 4}).select(0, 0), 1e-6));
  Tensor pad = make_padding_mask(from_vector<int64_t>({5, 0}, {1, 2}), 0);
  EXPECT_TRUE(pad.at<bool>({0, 0, 0, 0}));   // the real token may be attended to
  EXPECT_FALSE(pad.at<bool>({0, 0, 0, 1}));  // the padding may not
}

// ---- 003, scaled_dot_product_attention_torch returns `attn` AFTER dropout, so the "attention
// weights" it hands back are not probabilities in training (rows do not sum to 1).
TEST(SeedPitfall003, ReturnedWeightsAreProbabilitiesEvenWithDropout) {
  MultiheadAttention mha(8, 2, /*dropout=*/0.5);
  mha.train();
  Tensor x = randn({2, 6, 8});
  AttentionOutput a = mha(x, x, x);
  EXPECT_TRUE(tensors_near(a.weights.sum({-1}), ones({2, 2, 6}), 1e-6));
}

// ---- 004_b76f018ad56412eb.txt: scores.masked_fill(mask == 0, -float("inf")) with a query mask
// (bmm of query_mask and key_mask) blocks whole rows for padded queries: softmax of a row of -inf
// is NaN, and the NaN spreads through every later layer. Ours gives such rows zero weights.
TEST(SeedPitfall004, FullyMaskedQueryRowsGiveZerosNotNaN) {
  Tensor query_real = from_vector<double>({1, 1, 0}, {1, 3}, kBool);
  Tensor key_real = from_vector<double>({1, 0, 1, 1}, {1, 4}, kBool);
  Tensor mask = logical_and(query_real.unsqueeze(-1), key_real.unsqueeze(1));  // [1, 3, 4]
  MultiheadAttention mha(8, 2);
  Tensor q = randn({1, 3, 8}, TensorOptions().requires_grad(true)), kv = randn({1, 4, 8});
  AttentionOutput a = mha(q, kv, kv, mask);
  for (float v : a.output.to_vector<float>()) EXPECT_TRUE(std::isfinite(v));
  EXPECT_TRUE(tensors_equal(a.weights.select(2, 2), zeros({1, 2, 4})));
  a.output.sum().backward();
  for (float g : q.grad().to_vector<float>()) EXPECT_TRUE(std::isfinite(g));
}

// ---- 004, the formula Attention(q_t, K, V) = Σ_{s=1}^{m} ... sums over m, the number of
// QUERIES; the sum (and the softmax) runs over the n keys. With T != S only one is right.
TEST(SeedPitfall004, SoftmaxRunsOverKeysNotQueries) {
  AttentionOutput a =
      scaled_dot_product_attention(randn({2, 3, 4}), randn({2, 5, 4}), randn({2, 5, 2}));
  EXPECT_TRUE(tensors_near(a.weights.sum({-1}), ones({2, 3}), 1e-6));
  EXPECT_FALSE(tensors_near(a.weights.sum({-2}), ones({2, 5}), 1e-3));
}

// ---- 004, TransformerEncoder stacks pre-LN layers (x + f(LN(x))) with no final LayerNorm, so
// its output is the raw, ever-growing residual stream. Ours normalises it once at the end.
TEST(SeedPitfall004, PreLNEncoderEndsWithALayerNorm) {
  TransformerOptions o = small_options(true);
  Encoder encoder(o);
  ASSERT_NE(encoder.norm, nullptr);
  Tensor y = encoder(randn({2, 5, 8}) * 100.0 + 50.0);
  EXPECT_TRUE(tensors_near(y.mean({-1}), zeros({2, 5}), 1e-4));
  EXPECT_TRUE(tensors_near(y.var({-1}, /*correction=*/0), ones({2, 5}), 1e-3));
}

// ---- 004, Embeddings: `self.dropout = nn.Dropout()` silently uses p = 0.5 (the default)
// instead of the configured hidden_dropout_prob. Our embedding dropout takes options.dropout.
TEST(SeedPitfall004, EmbeddingDropoutUsesTheConfiguredRate) {
  TransformerOptions o = small_options(false);
  o.dropout = 0.1;
  Transformer model(o);
  EXPECT_EQ(model.dropout->p, 0.1);
  EXPECT_EQ(model.encoder->layers->at<EncoderLayer>(0)->dropout1->p, 0.1);
  EXPECT_EQ(model.encoder->layers->at<EncoderLayer>(0)->self_attn->dropout, 0.1);
}

}  // namespace
}  // namespace sg::nn

namespace sg::nn {
namespace {

// ---- 002_9c392148fc43a2ad.txt, make_trg_mask: the target mask is only the causal triangle, so
// padded target positions stay visible as keys. Ours is target padding AND causal.
TEST(SeedPitfall002, TargetMaskHidesTargetPaddingToo) {
  Transformer model(small_options(false));
  Tensor tgt = from_vector(std::vector<int64_t>{1, 4, 2, 0, 0}, {1, 5});  // two pad positions
  Tensor mask = model.target_mask(tgt);                                   // [1, 1, 5, 5]
  Tensor expected = logical_and(make_causal_mask(5), make_padding_mask(tgt, 0));
  EXPECT_TRUE(tensors_equal(mask.to(kInt64), expected.expand({1, 1, 5, 5}).to(kInt64)));
  EXPECT_FALSE(mask.at<bool>({0, 0, 4, 3}));  // causal alone would let position 4 see pad 3
  EXPECT_TRUE(mask.at<bool>({0, 0, 4, 2}));
}

}  // namespace
}  // namespace sg::nn
