#include "nn/data/joint_sequence_g2p.h"

#include <algorithm>
#include <array>
#include <map>

#include "autograd/error.h"

namespace sg::data {

namespace {

// A partial pronunciation: the letters up to its position are cut into graphones.
struct Hypothesis {
  double log_prob = 0;
  std::vector<int32_t> history;  // the last order-1 tokens, <s> first at the start
  size_t phonemes = 0;           // how many it has (the constrained search matches them)
  int32_t token = -1;            // the graphone taken last; -1 at the start
  size_t parent_position = 0, parent = 0;
};

// What two hypotheses at one position must share to be one: the same future (the n-gram's
// history) and, when matching a target, the same number of its phonemes.
std::string recombination_key(const Hypothesis& h) {
  std::string key(reinterpret_cast<const char*>(h.history.data()),
                  h.history.size() * sizeof(int32_t));
  key.append(reinterpret_cast<const char*>(&h.phonemes), sizeof(h.phonemes));
  return key;
}

}  // namespace

JointSequenceG2p::JointSequenceG2p(const std::vector<DictionaryWord>& training,
                                   JointSequenceOptions options)
    : options_(options) {
  SG_CHECK(options.order >= 1 && options.order <= NgramModel::kMaxOrder,
           "JointSequenceG2p: order {} is not in 1..{}", options.order, NgramModel::kMaxOrder);
  SG_CHECK(options.beam >= 1, "JointSequenceG2p: beam must be at least 1, got {}", options.beam);
  std::vector<SpelledPronunciation> pairs;
  for (const DictionaryWord& w : training)
    for (const auto& p : w.pronunciations) pairs.emplace_back(w.spelling, p);
  const GraphoneAligner aligner(pairs, options.iterations);
  std::unordered_map<std::string, int32_t> ids;
  std::vector<std::vector<int32_t>> sentences;
  for (const auto& [spelling, phonemes] : pairs) {
    const auto cut = aligner.align(spelling, phonemes);
    if (!cut) {
      ++unaligned_;
      continue;
    }
    std::vector<int32_t> sentence;
    for (const Graphone& g : *cut) {
      const auto [it, added] = ids.emplace(to_string(g), static_cast<int32_t>(graphones_.size()));
      if (added) {
        graphones_.push_back(g);
        by_letters_[g.letters].push_back(it->second);
      }
      sentence.push_back(it->second);
    }
    sentences.push_back(std::move(sentence));
  }
  ngram_ = std::make_unique<NgramModel>(sentences, options.order,
                                        static_cast<int32_t>(graphones_.size()));
}

std::vector<ScoredPronunciation> JointSequenceG2p::search(const std::string& spelling,
                                                          const std::vector<std::string>* target,
                                                          int64_t n) const {
  const size_t letters = spelling.size();
  const auto keep = static_cast<size_t>(options_.order - 1);
  // beams[i]: the hypotheses that have cut the first i letters.
  std::vector<std::vector<Hypothesis>> beams(letters + 1);
  std::vector<std::unordered_map<std::string, size_t>> index(letters + 1);
  beams[0].push_back({.history = {ngram_->bos()}});
  for (size_t i = 0; i < letters; ++i) {
    std::vector<Hypothesis>& here = beams[i];
    std::sort(here.begin(), here.end(),
              [](const Hypothesis& a, const Hypothesis& b) { return a.log_prob > b.log_prob; });
    if (here.size() > static_cast<size_t>(options_.beam))
      here.resize(static_cast<size_t>(options_.beam));
    // The graphones of the next one and two letters: the same for every hypothesis here.
    std::array<const std::vector<int32_t>*, 3> next_chunks{};
    for (size_t a = 1; a <= 2 && i + a <= letters; ++a) {
      const auto chunk = by_letters_.find(spelling.substr(i, a));
      if (chunk != by_letters_.end()) next_chunks[a] = &chunk->second;
    }
    for (size_t h = 0; h < here.size(); ++h) {
      // Every graphone that can follow: its letters next in the spelling (and, matching a
      // target, its phonemes next in it), all scored after this history at once.
      std::vector<std::pair<size_t, int32_t>> steps;  // (letters, token)
      std::vector<int32_t> tokens;
      const size_t had = here[h].phonemes;
      for (size_t a = 1; a <= 2; ++a) {
        if (!next_chunks[a]) continue;
        for (int32_t token : *next_chunks[a]) {
          const std::vector<std::string>& sounds = graphones_[static_cast<size_t>(token)].phonemes;
          if (target && (had + sounds.size() > target->size() ||
                         !std::equal(sounds.begin(), sounds.end(),
                                     target->begin() + static_cast<std::ptrdiff_t>(had))))
            continue;
          steps.emplace_back(a, token);
          tokens.push_back(token);
        }
      }
      const std::vector<double> log_probs = ngram_->log_probs(here[h].history, tokens);
      for (size_t s = 0; s < steps.size(); ++s) {
        const auto [a, token] = steps[s];
        Hypothesis next{
            .log_prob = here[h].log_prob + log_probs[s],
            .history = here[h].history,
            .phonemes = target ? had + graphones_[static_cast<size_t>(token)].phonemes.size() : 0,
            .token = token,
            .parent_position = i,
            .parent = h};
        next.history.push_back(token);
        if (next.history.size() > keep)
          next.history.erase(next.history.begin(),
                             next.history.end() - static_cast<std::ptrdiff_t>(keep));
        const auto [slot, added] =
            index[i + a].emplace(recombination_key(next), beams[i + a].size());
        if (added) {
          beams[i + a].push_back(std::move(next));
        } else if (next.log_prob > beams[i + a][slot->second].log_prob) {
          beams[i + a][slot->second] = std::move(next);
        }
      }
    }
  }
  // Complete hypotheses, </s> scored, their phonemes read back; the best of each pronunciation.
  std::map<std::vector<std::string>, double> best;
  for (const Hypothesis& h : beams[letters]) {
    if (target && h.phonemes != target->size()) continue;
    std::vector<std::string> phonemes;
    for (const Hypothesis* at = &h; at->token >= 0; at = &beams[at->parent_position][at->parent]) {
      const auto& sounds = graphones_[static_cast<size_t>(at->token)].phonemes;
      phonemes.insert(phonemes.begin(), sounds.begin(), sounds.end());
    }
    const double total = h.log_prob + ngram_->log_prob(h.history, ngram_->eos());
    auto [it, added] = best.emplace(std::move(phonemes), total);
    if (!added) it->second = std::max(it->second, total);
  }
  std::vector<ScoredPronunciation> out;
  for (auto& [phonemes, log_prob] : best) out.push_back({phonemes, log_prob});
  std::sort(out.begin(), out.end(),
            [](const auto& a, const auto& b) { return a.log_prob > b.log_prob; });
  if (out.size() > static_cast<size_t>(n)) out.resize(static_cast<size_t>(n));
  return out;
}

std::vector<ScoredPronunciation> JointSequenceG2p::pronounce(const std::string& spelling,
                                                             int64_t n) const {
  SG_CHECK(n >= 1, "JointSequenceG2p::pronounce: n must be at least 1, got {}", n);
  return search(spelling, nullptr, n);
}

std::optional<double> JointSequenceG2p::log_prob(const std::string& spelling,
                                                 const std::vector<std::string>& phonemes) const {
  const auto found = search(spelling, &phonemes, 1);
  if (found.empty()) return std::nullopt;
  return found[0].log_prob;
}

}  // namespace sg::data
