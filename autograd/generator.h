// Random numbers: one seeded global generator, so runs are reproducible.
//   sg::manual_seed(0); auto x = sg::randn({2, 3});   // the same numbers on every run
// The stream is our own (splitmix64 + Box-Muller), not std::normal_distribution, whose output
// differs between standard libraries.
#pragma once

#include <cstdint>

#ifndef SG_HOST_DEVICE
#if defined(__CUDACC__)
#define SG_HOST_DEVICE __host__ __device__
#else
#define SG_HOST_DEVICE
#endif
#endif

namespace sg {

// Note [Counter-based random numbers]: splitmix64's state is a counter. next_u64() adds the odd
// constant kSplitmixGamma and returns a bit mix of the sum, so the k-th number after state s is
// mix(s + k·γ): any one of them can be computed alone, without the k - 1 before it, like
// Philox's (key, counter). Generator::take(n) hands out s and moves the state past n numbers; a
// kernel (Backend::uniform, for dropout masks) then computes element i as uniform_at(s, i + 1),
// in parallel on any device, with the same bits as n calls of next_uniform() on the host.
inline constexpr uint64_t kSplitmixGamma = 0x9E3779B97F4A7C15ull;

SG_HOST_DEVICE constexpr uint64_t splitmix64_mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
// The k-th (from 1) next_u64() of a generator in state `state`.
SG_HOST_DEVICE constexpr uint64_t random_u64_at(uint64_t state, uint64_t k) {
  return splitmix64_mix(state + k * kSplitmixGamma);
}
// The k-th (from 1) next_uniform() of a generator in state `state`: in [0, 1), 53 random bits.
SG_HOST_DEVICE constexpr double uniform_at(uint64_t state, uint64_t k) {
  return static_cast<double>(random_u64_at(state, k) >> 11) * 0x1.0p-53;
}

class Generator {
 public:
  explicit Generator(uint64_t seed = 0) { manual_seed(seed); }
  void manual_seed(uint64_t seed);
  uint64_t next_u64();    // 64 random bits
  double next_uniform();  // in [0, 1), 53 random bits
  double next_normal();   // standard normal
  // Returns the state, then moves it past n numbers, as n calls of next_u64() would: the caller
  // computes them itself with random_u64_at / uniform_at (Note [Counter-based random numbers]).
  uint64_t take(uint64_t n);
  uint64_t state() const { return state_; }  // for checkpoints: set_state(state()) resumes
  void set_state(uint64_t state) { state_ = state; }

 private:
  uint64_t state_ = 0;
};

Generator& default_generator();
void manual_seed(uint64_t seed);

// The default generator's state, restored when the scope ends (PyTorch's torch.random.fork_rng):
// what runs inside draws numbers without moving the program's stream. Reading a model from a
// checkpoint builds it first, and building initialises its weights from the generator, only for
// the file to replace them: without this, loading a model would change what training draws next.
//   { sg::ForkRng keep_the_stream; model = std::make_shared<Transformer>(options); }
class ForkRng {
 public:
  ForkRng() : saved_(default_generator().state()) {}
  ~ForkRng() { default_generator().set_state(saved_); }
  ForkRng(const ForkRng&) = delete;
  ForkRng& operator=(const ForkRng&) = delete;

 private:
  uint64_t saved_;
};

}  // namespace sg
