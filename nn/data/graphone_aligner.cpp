#include "nn/data/graphone_aligner.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <array>
#include <cmath>

#include "autograd/error.h"

namespace sg::data {

namespace {

// The chunk kinds: (letters, phonemes). Two letters to two phonemes is left out: with it, EM
// explains "ph|F" and "oe|IY1" both as one "phoe|F IY1"-like chunk as readily as two.
constexpr std::array<std::pair<size_t, size_t>, 5> kChunks = {
    {{1, 0}, {2, 0}, {1, 1}, {1, 2}, {2, 1}}};

// How long a chunk is, for the prior and the final cut: its letters and phonemes, a silent
// chunk's nothing counted as one phoneme.
double length_of(size_t letters, size_t phonemes) {
  return static_cast<double>(letters + std::max<size_t>(phonemes, 1));
}

// The weight of one occurrence of a chunk before EM: short chunks first (e^-length), silent
// letters almost never (e^-99), so that EM starts from one-to-one cuts and silences a letter only
// where the word needs it (Phonetisaurus' initialisation).
double prior_of(size_t letters, size_t phonemes) {
  return std::exp(phonemes == 0 ? -99.0 : -length_of(letters, phonemes));
}

// One chunk of a word's grid, from cell (i, j) to (i + letters, j + phonemes); a cell is
// i * (phonemes + 1) + j, so every edge goes to a higher cell.
struct Edge {
  int32_t from, to;
  size_t i, a, j, b;  // the letters [i, i + a) and phonemes [j, j + b) it takes
};

Graphone graphone_of(const std::string& spelling, const std::vector<std::string>& phonemes,
                     const Edge& e) {
  return {spelling.substr(e.i, e.a),
          std::vector<std::string>(phonemes.begin() + static_cast<std::ptrdiff_t>(e.j),
                                   phonemes.begin() + static_cast<std::ptrdiff_t>(e.j + e.b))};
}

// Every chunk on a complete cut of the pair (from the first cell, reachable from it, and to the
// last, reaching it), in increasing order of `from`. Empty when no cut fits.
std::vector<Edge> grid_of(const std::string& spelling, const std::vector<std::string>& phonemes) {
  const size_t n = spelling.size(), m = phonemes.size();
  if (n == 0 || m == 0 || m > 2 * n) return {};
  const auto cell = [&](size_t i, size_t j) { return static_cast<int32_t>(i * (m + 1) + j); };
  std::vector<Edge> all;
  for (size_t i = 0; i < n; ++i)
    for (size_t j = 0; j <= m; ++j)
      for (auto [a, b] : kChunks)
        if (i + a <= n && j + b <= m) all.push_back({cell(i, j), cell(i + a, j + b), i, a, j, b});
  const auto cells = static_cast<size_t>(cell(n, m)) + 1;
  std::vector<char> from_start(cells, 0), to_end(cells, 0);
  from_start[0] = 1;
  for (const Edge& e : all)
    if (from_start[static_cast<size_t>(e.from)]) from_start[static_cast<size_t>(e.to)] = 1;
  to_end[cells - 1] = 1;
  for (auto e = all.rbegin(); e != all.rend(); ++e)
    if (to_end[static_cast<size_t>(e->to)]) to_end[static_cast<size_t>(e->from)] = 1;
  std::vector<Edge> live;
  for (const Edge& e : all)
    if (from_start[static_cast<size_t>(e.from)] && to_end[static_cast<size_t>(e.to)])
      live.push_back(e);
  return live;
}

}  // namespace

std::string to_string(const Graphone& g) {
  return fmt::format("{}|{}", g.letters, fmt::join(g.phonemes, " "));
}

GraphoneAligner::GraphoneAligner(const std::vector<SpelledPronunciation>& pairs, int iterations) {
  SG_CHECK(iterations >= 1, "GraphoneAligner: iterations must be at least 1, got {}", iterations);
  // Each pair's grid once, its chunks as indices: the rounds of EM are then arithmetic only.
  struct Lattice {
    std::vector<int32_t> from, to, unit;
    size_t cells = 0;
  };
  std::vector<Lattice> lattices;
  std::vector<double> prior;  // per chunk: the weight of one occurrence before EM
  for (const auto& [spelling, phonemes] : pairs) {
    const std::vector<Edge> grid = grid_of(spelling, phonemes);
    if (grid.empty()) {
      ++unalignable_;
      continue;
    }
    Lattice l{.cells = spelling.size() * (phonemes.size() + 1) + phonemes.size() + 1};
    l.from.reserve(grid.size());  // exactly: every pronunciation's lattice is kept through EM
    l.to.reserve(grid.size());
    l.unit.reserve(grid.size());
    for (const Edge& e : grid) {
      const auto [it, added] = ids_.emplace(to_string(graphone_of(spelling, phonemes, e)),
                                            static_cast<int32_t>(ids_.size()));
      if (added) prior.push_back(prior_of(e.a, e.b));
      l.from.push_back(e.from);
      l.to.push_back(e.to);
      l.unit.push_back(it->second);
    }
    lattices.push_back(std::move(l));
  }
  SG_CHECK(!lattices.empty(), "GraphoneAligner: none of the {} pairs can be aligned", pairs.size());
  std::vector<double> counts(ids_.size()), alpha, beta;
  for (size_t l = 0; l < lattices.size(); ++l)
    for (size_t e = 0; e < lattices[l].unit.size(); ++e)
      counts[static_cast<size_t>(lattices[l].unit[e])] +=
          prior[static_cast<size_t>(lattices[l].unit[e])];
  normalize(counts);
  for (int round = 0; round < iterations; ++round) {
    std::fill(counts.begin(), counts.end(), 0.0);
    for (const Lattice& l : lattices) {
      // alpha: the weight of every partial cut reaching a cell; beta: of every cut from it on.
      alpha.assign(l.cells, 0.0);
      beta.assign(l.cells, 0.0);
      alpha[0] = beta[l.cells - 1] = 1.0;
      const size_t edges = l.unit.size();
      for (size_t e = 0; e < edges; ++e)
        alpha[static_cast<size_t>(l.to[e])] +=
            alpha[static_cast<size_t>(l.from[e])] * probabilities_[static_cast<size_t>(l.unit[e])];
      for (size_t e = edges; e-- > 0;)
        beta[static_cast<size_t>(l.from[e])] +=
            probabilities_[static_cast<size_t>(l.unit[e])] * beta[static_cast<size_t>(l.to[e])];
      const double total = alpha[l.cells - 1];
      if (!(total > 0) || !std::isfinite(total)) continue;  // underflow on a very long word
      for (size_t e = 0; e < edges; ++e) {
        const auto u = static_cast<size_t>(l.unit[e]);
        counts[u] += alpha[static_cast<size_t>(l.from[e])] * probabilities_[u] *
                     beta[static_cast<size_t>(l.to[e])] / total;
      }
    }
    normalize(counts);
  }
}

void GraphoneAligner::normalize(const std::vector<double>& counts) {
  double sum = 0;
  for (double c : counts) sum += c;
  probabilities_.resize(counts.size());
  for (size_t u = 0; u < counts.size(); ++u) probabilities_[u] = counts[u] / sum;
}

double GraphoneAligner::probability(const Graphone& g) const {
  const auto it = ids_.find(to_string(g));
  return it == ids_.end() ? 0.0 : probabilities_[static_cast<size_t>(it->second)];
}

std::optional<std::vector<Graphone>> GraphoneAligner::align(
    const std::string& spelling, const std::vector<std::string>& phonemes) const {
  const std::vector<Edge> grid = grid_of(spelling, phonemes);
  if (grid.empty()) return std::nullopt;
  const size_t cells = spelling.size() * (phonemes.size() + 1) + phonemes.size() + 1;
  // The best log-probability of a partial cut reaching each cell, and the chunk it came by.
  std::vector<double> best(cells, -INFINITY);
  std::vector<const Edge*> came_by(cells, nullptr);
  best[0] = 0;
  for (const Edge& e : grid) {
    const double p = probability(graphone_of(spelling, phonemes, e));
    const auto from = static_cast<size_t>(e.from), to = static_cast<size_t>(e.to);
    if (p <= 0 || best[from] == -INFINITY) continue;
    // Each chunk's log-probability weighed by its length: of two cuts EM finds about as likely,
    // the one of shorter chunks (Phonetisaurus' "penalize").
    const double score = best[from] + length_of(e.a, e.b) * std::log(p);
    if (score > best[to]) {
      best[to] = score;
      came_by[to] = &e;
    }
  }
  if (!came_by[cells - 1]) return std::nullopt;  // only through chunks training never had
  std::vector<Graphone> cut;
  for (const Edge* e = came_by[cells - 1]; e; e = came_by[static_cast<size_t>(e->from)])
    cut.insert(cut.begin(), graphone_of(spelling, phonemes, *e));
  return cut;
}

}  // namespace sg::data
