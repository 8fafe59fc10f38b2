// An n-gram language model with interpolated modified Kneser-Ney smoothing (Chen and Goodman,
// 1998): the probability of a token given the n-1 before it, from counts, with every order's
// estimate mixed with the next lower order's so that an unseen n-gram still gets a share.
//
//   NgramModel lm(sentences, /*order=*/3, /*vocabulary=*/100);
//   double lp = lm.log_prob({lm.bos(), 7}, 12);   // log P(12 | <s> 7), natural log
//
// What makes Kneser-Ney work: a lower order is only consulted for what the higher order has not
// seen, so it should say how many *different* contexts a token follows, not how often it occurs
// ("Francisco" is frequent but follows only "San"). Below the top order, counts are these
// continuation counts; each count is discounted (by D1, D2 or D3+ for counts 1, 2, 3+, estimated
// from how many n-grams occur once, twice, ...), and what the discounts took is the lower order's
// weight. Below unigrams, a uniform floor over the vocabulary and </s>.
//
// Tokens are 0 .. vocabulary-1; bos() (<s>) and eos() (</s>) are the two after them. Each
// sentence is read as <s> tokens </s>.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

namespace sg::data {

class NgramModel {
 public:
  static constexpr int kMaxOrder = 8;
  static constexpr int32_t kMaxVocabulary = 65533;  // every token, <s> and </s> fit 16 bits

  // Counts every n-gram of orders 1..order in the sentences. Throws on an order outside 1..8, a
  // vocabulary outside 1..kMaxVocabulary, or a token outside it (naming the sentence).
  NgramModel(const std::vector<std::vector<int32_t>>& sentences, int order, int32_t vocabulary);

  int order() const { return order_; }
  int32_t bos() const { return vocabulary_; }
  int32_t eos() const { return vocabulary_ + 1; }

  // log P(token | history), natural log: the last order-1 tokens of `history` count (it may be
  // shorter: the start of a sentence is <s>). token is 0 .. vocabulary-1 or eos(). Never -inf:
  // the uniform floor gives every token a share.
  double log_prob(std::span<const int32_t> history, int32_t token) const;
  // log P of each of `tokens` after one history, the history looked up once (what a search that
  // extends one hypothesis by many tokens calls).
  std::vector<double> log_probs(std::span<const int32_t> history,
                                std::span<const int32_t> tokens) const;

  // The discounts D1, D2, D3+ of an order (1 .. order()), for the tests and the curious.
  std::array<double, 3> discounts(int order) const { return discounts_[order - 1]; }

 private:
  // An n-gram of up to 8 tokens, 16 bits each.
  struct Key {
    uint64_t high = 0, low = 0;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const;
  };
  // What follows one history at one order: the sum of its (adjusted) counts and how many
  // followers have count 1, 2 and 3 or more.
  struct Followers {
    double total = 0;
    int64_t ones = 0, twos = 0, more = 0;
  };
  static Key key_of(std::span<const int32_t> tokens);

  int order_;
  int32_t vocabulary_;
  // Per order k (index k-1): the adjusted count of each k-gram (raw at the top order and for
  // n-grams that start with <s>; continuation counts below), each (k-1)-token history's
  // followers, and the discounts.
  std::vector<std::unordered_map<Key, double, KeyHash>> counts_;
  std::vector<std::unordered_map<Key, Followers, KeyHash>> followers_;
  std::vector<std::array<double, 3>> discounts_;
};

}  // namespace sg::data
