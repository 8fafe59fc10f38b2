// How g2p reports error rates and mistakes: `g2p eval` for the model, `g2p score` for another
// system's predictions, in the same words, so that the two read alike.
#pragma once

#include <string>
#include <vector>

#include "trainer.h"

namespace g2p {

// "<what>: WER ..  PER ..  (without stress: ..)", then the wrong words by kind.
void print_error_rates(const std::string& what, const ErrorRates& r);

// Prints `word` with its prediction, its first reference and the kind of mistake, if the
// prediction is none of its references; returns whether it printed (eval's and score's --errors).
bool print_if_wrong(const std::string& word, const std::vector<std::string>& predicted,
                    const std::vector<std::vector<std::string>>& references);

}  // namespace g2p
