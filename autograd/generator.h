// Random numbers: one seeded global generator, so runs are reproducible.
//   sg::manual_seed(0); auto x = sg::randn({2, 3});   // the same numbers on every run
// The stream is our own (splitmix64 + Box-Muller), not std::normal_distribution, whose output
// differs between standard libraries.
#pragma once

#include <cstdint>

namespace sg {

class Generator {
 public:
  explicit Generator(uint64_t seed = 0) { manual_seed(seed); }
  void manual_seed(uint64_t seed);
  uint64_t next_u64();                       // 64 random bits
  double next_uniform();                     // in [0, 1), 53 random bits
  double next_normal();                      // standard normal
  uint64_t state() const { return state_; }  // for checkpoints: set_state(state()) resumes
  void set_state(uint64_t state) { state_ = state; }

 private:
  uint64_t state_ = 0;
};

Generator& default_generator();
void manual_seed(uint64_t seed);

}  // namespace sg
