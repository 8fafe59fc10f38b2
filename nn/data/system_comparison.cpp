#include "nn/data/system_comparison.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "autograd/error.h"
#include "nn/data/error_rates.h"

namespace sg::data {

namespace {

double share(int64_t part, int64_t whole) {
  return whole > 0 ? static_cast<double>(part) / static_cast<double>(whole) : 0.0;
}

// The groups' bounds: a word of n letters is in the first group whose upper bound is >= n.
struct Bucket {
  int64_t low, high;  // inclusive
  std::string label;
};

const std::vector<Bucket>& length_buckets() {
  static const std::vector<Bucket> buckets = {
      {1, 4, "1-4 letters"},   {5, 6, "5-6 letters"},     {7, 8, "7-8 letters"},
      {9, 10, "9-10 letters"}, {11, 13, "11-13 letters"}, {14, INT64_MAX, "14+ letters"}};
  return buckets;
}

const std::vector<Bucket>& context_buckets() {
  static const std::vector<Bucket> buckets = {{0, 0, "a trigram never seen"},
                                              {1, 9, "rarest trigram 1-9 times"},
                                              {10, 99, "rarest trigram 10-99 times"},
                                              {100, 999, "rarest trigram 100-999"},
                                              {1000, INT64_MAX, "rarest trigram 1000+"}};
  return buckets;
}

size_t bucket_of(const std::vector<Bucket>& buckets, int64_t value) {
  for (size_t i = 0; i < buckets.size(); ++i)
    if (value >= buckets[i].low && value <= buckets[i].high) return i;
  SG_FAIL("compare_systems: {} is in no group", value);
}

bool is_right(const std::vector<std::string>& predicted,
              const std::vector<std::vector<std::string>>& references) {
  return std::find(references.begin(), references.end(), predicted) != references.end();
}

void add(Agreement& a, bool first_right, bool second_right) {
  ++a.words;
  if (first_right && second_right) ++a.both_right;
  if (first_right && !second_right) ++a.only_first;
  if (!first_right && second_right) ++a.only_second;
  if (!first_right && !second_right) ++a.both_wrong;
}

std::vector<std::string> trigrams_of(const std::string& spelling) {
  const std::string marked = "^" + spelling + "$";
  std::vector<std::string> out;
  for (size_t i = 0; i + 3 <= marked.size(); ++i) out.push_back(marked.substr(i, 3));
  return out;
}

// The groups that have words, in order.
std::vector<AgreementGroup> nonempty(std::vector<AgreementGroup> groups) {
  std::erase_if(groups, [](const AgreementGroup& g) { return g.with_stress.words == 0; });
  return groups;
}

std::vector<AgreementGroup> groups_of(const std::vector<Bucket>& buckets) {
  std::vector<AgreementGroup> groups;
  for (const Bucket& b : buckets) groups.push_back({.label = b.label});
  return groups;
}

}  // namespace

double Agreement::wer_first() const { return share(only_second + both_wrong, words); }
double Agreement::wer_second() const { return share(only_first + both_wrong, words); }
double Agreement::oracle_wer() const { return share(both_wrong, words); }

LetterContexts::LetterContexts(const std::vector<DictionaryWord>& training) {
  for (const DictionaryWord& w : training) {
    std::vector<std::string> trigrams = trigrams_of(w.spelling);
    std::sort(trigrams.begin(), trigrams.end());
    trigrams.erase(std::unique(trigrams.begin(), trigrams.end()), trigrams.end());
    for (const std::string& t : trigrams) ++counts_[t];
  }
}

int64_t LetterContexts::rarest(const std::string& spelling) const {
  int64_t fewest = std::numeric_limits<int64_t>::max();
  for (const std::string& t : trigrams_of(spelling)) {
    auto it = counts_.find(t);
    fewest = std::min(fewest, it == counts_.end() ? 0 : it->second);
  }
  return fewest;  // every spelling has at least one trigram: "^a$"
}

SystemComparison compare_systems(const std::vector<DictionaryWord>& words,
                                 const std::vector<std::vector<std::string>>& first,
                                 const std::vector<std::vector<std::string>>& second,
                                 const std::vector<DictionaryWord>& training) {
  SG_CHECK(first.size() == words.size() && second.size() == words.size(),
           "compare_systems: {} words, but {} predictions of the first system and {} of the second",
           words.size(), first.size(), second.size());
  SystemComparison c{.all = {.label = "all words"}};
  std::vector<AgreementGroup> by_length = groups_of(length_buckets());
  std::vector<AgreementGroup> by_context = groups_of(context_buckets());
  const LetterContexts contexts(training);
  for (size_t i = 0; i < words.size(); ++i) {
    const DictionaryWord& w = words[i];
    SG_CHECK(!w.spelling.empty() && !w.pronunciations.empty(),
             "compare_systems: word {} ('{}') has no spelling or no pronunciation", i, w.spelling);
    std::vector<std::vector<std::string>> references_without_stress;
    for (const auto& r : w.pronunciations) references_without_stress.push_back(without_stress(r));
    const bool first_right = is_right(first[i], w.pronunciations);
    const bool second_right = is_right(second[i], w.pronunciations);
    const bool first_sounds = is_right(without_stress(first[i]), references_without_stress);
    const bool second_sounds = is_right(without_stress(second[i]), references_without_stress);
    std::vector<AgreementGroup*> groups = {
        &c.all, &by_length[bucket_of(length_buckets(), static_cast<int64_t>(w.spelling.size()))]};
    if (!training.empty())
      groups.push_back(&by_context[bucket_of(context_buckets(), contexts.rarest(w.spelling))]);
    for (AgreementGroup* g : groups) {
      add(g->with_stress, first_right, second_right);
      add(g->without_stress, first_sounds, second_sounds);
    }
    c.first_kinds.add(first[i], w.pronunciations);
    c.second_kinds.add(second[i], w.pronunciations);
  }
  c.by_length = nonempty(std::move(by_length));
  if (!training.empty()) c.by_context = nonempty(std::move(by_context));
  return c;
}

std::string describe(const SystemComparison& c, const std::string& first_name,
                     const std::string& second_name) {
  const auto percent = [](double x) { return fmt::format("{:.2f}%", 100 * x); };
  std::string out;
  for (bool stress : {true, false}) {
    out += fmt::format("{}:\n{:<28} {:>6}  {:>9}  {:>9}  {:>9}  {:>9}  {:>9}\n",
                       stress ? "WER with stress" : "WER without stress (stress digits dropped)",
                       "", "words", first_name.substr(0, 9), second_name.substr(0, 9), "only 1st",
                       "only 2nd", "oracle");
    std::vector<const AgreementGroup*> rows = {&c.all};
    for (const auto& g : c.by_length) rows.push_back(&g);
    for (const auto& g : c.by_context) rows.push_back(&g);
    for (const AgreementGroup* g : rows) {
      const Agreement& a = stress ? g->with_stress : g->without_stress;
      out += fmt::format("{:<28} {:>6}  {:>9}  {:>9}  {:>9}  {:>9}  {:>9}\n", g->label, a.words,
                         percent(a.wer_first()), percent(a.wer_second()), a.only_first,
                         a.only_second, percent(a.oracle_wer()));
    }
  }
  out +=
      "(only 1st, only 2nd: words one system gets right and the other wrong; oracle: the WER "
      "of choosing the right one of the two whenever one is right)\n";
  for (const auto& [name, kinds] :
       {std::pair{first_name, &c.first_kinds}, std::pair{second_name, &c.second_kinds}}) {
    out += fmt::format("{} wrong words by kind: stress only {}, vowels only {}, a consonant {}\n",
                       name, kinds->stress(), kinds->vowels(), kinds->consonants());
  }
  return out;
}

}  // namespace sg::data
