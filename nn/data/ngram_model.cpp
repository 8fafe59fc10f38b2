#include "nn/data/ngram_model.h"

#include <algorithm>
#include <cmath>

#include "autograd/error.h"

namespace sg::data {

namespace {

using Tokens = std::array<int32_t, NgramModel::kMaxOrder>;

// Chen and Goodman's estimates from the number of n-grams seen once, twice, three and four times;
// where an order has too few n-grams for them (a small corpus), the usual defaults.
std::array<double, 3> estimate_discounts(const std::array<int64_t, 4>& n) {
  if (n[0] == 0 || n[1] == 0 || n[2] == 0 || n[3] == 0) return {0.5, 1.0, 1.5};
  const auto d = [&](int i) { return static_cast<double>(n[i]); };
  const double y = d(0) / (d(0) + 2 * d(1));
  std::array<double, 3> discounts = {1 - 2 * y * d(1) / d(0), 2 - 3 * y * d(2) / d(1),
                                     3 - 4 * y * d(3) / d(2)};
  // A discount above its count would take more than the n-gram has (and break the sum to 1).
  for (int i = 0; i < 3; ++i) discounts[i] = std::clamp(discounts[i], 0.0, i + 1.0);
  return discounts;
}

}  // namespace

size_t NgramModel::KeyHash::operator()(const Key& k) const {
  uint64_t h = k.high * 0x9E3779B97F4A7C15ull ^ (k.low + 0x632BE59BD9B4E019ull);
  h ^= h >> 31;  // splitmix64's finalizer: every bit of both words reaches the low bits
  h *= 0xBF58476D1CE4E5B9ull;
  h ^= h >> 29;
  return static_cast<size_t>(h);
}

NgramModel::Key NgramModel::key_of(std::span<const int32_t> tokens) {
  Key key;
  for (size_t i = 0; i < tokens.size(); ++i) {
    const uint64_t bits = static_cast<uint16_t>(tokens[i]);
    (i < 4 ? key.high : key.low) |= bits << (16 * (i % 4));
  }
  return key;
}

NgramModel::NgramModel(const std::vector<std::vector<int32_t>>& sentences, int order,
                       int32_t vocabulary)
    : order_(order), vocabulary_(vocabulary) {
  SG_CHECK(order >= 1 && order <= kMaxOrder, "NgramModel: order {} is not in 1..{}", order,
           kMaxOrder);
  SG_CHECK(vocabulary >= 1 && vocabulary <= kMaxVocabulary,
           "NgramModel: a vocabulary of {} tokens is not in 1..{}", vocabulary, kMaxVocabulary);
  const auto n = static_cast<size_t>(order);
  std::vector<std::unordered_map<Key, double, KeyHash>> raw(n);
  // Each k-gram with its tokens, kept beside the counts: the continuation counts need them.
  std::vector<std::unordered_map<Key, Tokens, KeyHash>> tokens_of(n);
  std::vector<int32_t> padded;
  for (size_t s = 0; s < sentences.size(); ++s) {
    padded.assign(1, bos());
    for (int32_t t : sentences[s]) {
      SG_CHECK(t >= 0 && t < vocabulary, "NgramModel: sentence {} has token {}, outside 0..{}", s,
               t, vocabulary - 1);
      padded.push_back(t);
    }
    padded.push_back(eos());
    for (size_t t = 1; t < padded.size(); ++t) {
      for (size_t k = 1; k <= n && k <= t + 1; ++k) {  // the k-gram that ends at t
        const std::span<const int32_t> gram(padded.data() + t + 1 - k, k);
        const Key key = key_of(gram);
        if (raw[k - 1][key]++ == 0)
          std::copy(gram.begin(), gram.end(), tokens_of[k - 1][key].begin());
      }
    }
  }
  // Adjusted counts: raw at the top order and for n-grams that start at <s> (nothing precedes
  // them); below the top, otherwise, the number of different tokens seen before the n-gram.
  counts_.resize(n);
  counts_[n - 1] = raw[n - 1];
  for (size_t k = 1; k < n; ++k) {
    for (const auto& [key, count] : raw[k - 1]) {
      if (tokens_of[k - 1][key][0] == bos()) counts_[k - 1][key] = count;
    }
    for (const auto& [key, tokens] : tokens_of[k]) {  // each different (k+1)-gram once
      counts_[k - 1][key_of(std::span<const int32_t>(tokens.data() + 1, k))] += 1;
    }
  }
  followers_.resize(n);
  discounts_.resize(n);
  for (size_t k = 1; k <= n; ++k) {
    std::array<int64_t, 4> count_of_counts{};
    for (const auto& [key, count] : counts_[k - 1]) {
      const Tokens& tokens = tokens_of[k - 1].at(key);
      Followers& f = followers_[k - 1][key_of(std::span<const int32_t>(tokens.data(), k - 1))];
      f.total += count;
      (count == 1 ? f.ones : count == 2 ? f.twos : f.more) += 1;
      if (count <= 4) ++count_of_counts[static_cast<size_t>(count) - 1];
    }
    discounts_[k - 1] = estimate_discounts(count_of_counts);
  }
}

std::vector<double> NgramModel::log_probs(std::span<const int32_t> history,
                                          std::span<const int32_t> tokens) const {
  for (int32_t token : tokens) {
    SG_CHECK((token >= 0 && token < vocabulary_) || token == eos(),
             "NgramModel::log_prob: token {} is not in 0..{} nor </s> ({})", token, vocabulary_ - 1,
             eos());
  }
  history =
      history.subspan(history.size() - std::min(history.size(), static_cast<size_t>(order_ - 1)));
  // The orders whose history (its last k-1 tokens) training saw, lowest first: once one was
  // never seen, no longer one was either, and each order above would only repeat the one below.
  std::vector<const Followers*> seen;
  for (size_t k = 1; k <= history.size() + 1; ++k) {
    const auto f = followers_[k - 1].find(key_of(history.subspan(history.size() - (k - 1))));
    if (f == followers_[k - 1].end()) break;
    seen.push_back(&f->second);
  }
  std::vector<double> out;
  out.reserve(tokens.size());
  Tokens gram{};
  for (int32_t token : tokens) {
    // From the uniform floor up: each order's discounted estimate plus, weighted by what its
    // discounts took, the order below.
    double p = 1.0 / static_cast<double>(vocabulary_ + 1);
    for (size_t k = 1; k <= seen.size(); ++k) {
      const std::span<const int32_t> context = history.subspan(history.size() - (k - 1));
      std::copy(context.begin(), context.end(), gram.begin());
      gram[k - 1] = token;
      const auto c = counts_[k - 1].find(key_of(std::span<const int32_t>(gram.data(), k)));
      const double count = c == counts_[k - 1].end() ? 0.0 : c->second;
      const std::array<double, 3>& d = discounts_[k - 1];
      const double discount = count == 0 ? 0.0 : count == 1 ? d[0] : count == 2 ? d[1] : d[2];
      const Followers& f = *seen[k - 1];
      const double lower_weight =
          (d[0] * static_cast<double>(f.ones) + d[1] * static_cast<double>(f.twos) +
           d[2] * static_cast<double>(f.more)) /
          f.total;
      p = (count - discount) / f.total + lower_weight * p;
    }
    out.push_back(std::log(p));
  }
  return out;
}

double NgramModel::log_prob(std::span<const int32_t> history, int32_t token) const {
  return log_probs(history, std::span<const int32_t>(&token, 1))[0];
}

}  // namespace sg::data
