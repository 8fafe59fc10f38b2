#include "nn/train/average_checkpoints.h"

#include <map>

#include "nn/train/checkpoint.h"

namespace sg::train {

namespace {

// The first file's tensors, by name, against one more file's: the same names, shapes and dtypes.
void check_same_tensors(const nn::NamedTensors& first, const std::string& first_path,
                        const nn::NamedTensors& other, const std::string& path) {
  std::map<std::string, const Tensor*> by_name;
  for (const auto& [name, t] : other) by_name[name] = &t;
  for (const auto& [name, t] : first) {
    auto it = by_name.find(name);
    SG_CHECK(it != by_name.end(), "average_checkpoints: {} has no tensor '{}', which {} has", path,
             name, first_path);
    const Tensor& o = *it->second;
    SG_CHECK(o.shape() == t.shape() && o.dtype() == t.dtype(),
             "average_checkpoints: tensor '{}' is {} {} in {} but {} {} in {}", name, o.dtype(),
             o.shape(), path, t.dtype(), t.shape(), first_path);
    by_name.erase(it);
  }
  SG_CHECK(by_name.empty(), "average_checkpoints: {} has a tensor '{}' that {} has not", path,
           by_name.empty() ? "" : by_name.begin()->first, first_path);
}

}  // namespace

nn::NamedTensors average_checkpoints(const std::vector<std::string>& paths) {
  SG_CHECK(!paths.empty(), "average_checkpoints: no checkpoints given");
  NoGradGuard no_grad;
  // One file in memory at a time besides the sums: a float64 tensor for each floating tensor,
  // int64 values for each integer one (overflow checked), the first file's values for bools.
  nn::NamedTensors first;
  std::vector<Tensor> sums;
  std::vector<std::vector<int64_t>> integer_sums;
  for (const std::string& path : paths) {
    const Checkpoint c = read_checkpoint(path);  // valid, finite
    SG_CHECK(!c.model.empty(), "average_checkpoints: {} holds no model tensors", path);
    if (first.empty()) {
      first = c.model;
      sums.resize(first.size());
      integer_sums.resize(first.size());
      for (size_t i = 0; i < first.size(); ++i) {
        const Tensor& t = first[i].second;
        if (t.is_floating_point()) sums[i] = t.to(kFloat64).clone();
        if (t.dtype() == kInt64) integer_sums[i] = t.to_vector<int64_t>();
      }
      continue;
    }
    check_same_tensors(first, paths.front(), c.model, path);
    const std::map<std::string, Tensor> by_name(c.model.begin(), c.model.end());
    for (size_t i = 0; i < first.size(); ++i) {
      const auto& [name, t] = first[i];
      const Tensor& o = by_name.at(name);
      if (t.is_floating_point()) {
        sums[i].add_(o.to(kFloat64));
      } else if (t.dtype() == kInt64) {
        const std::vector<int64_t> values = o.to_vector<int64_t>();
        for (size_t j = 0; j < values.size(); ++j) {
          SG_CHECK(!__builtin_add_overflow(integer_sums[i][j], values[j], &integer_sums[i][j]),
                   "average_checkpoints: the sum of the int64 tensor '{}' overflows", name);
        }
      } else {
        SG_CHECK(o.to_vector<double>() == t.to_vector<double>(),
                 "average_checkpoints: the {} tensor '{}' differs between {} and {}; only numbers "
                 "can be averaged",
                 t.dtype(), name, paths.front(), path);
      }
    }
  }
  const auto count = static_cast<int64_t>(paths.size());
  nn::NamedTensors mean;
  for (size_t i = 0; i < first.size(); ++i) {
    const auto& [name, t] = first[i];
    if (t.is_floating_point()) {
      mean.emplace_back(name, (sums[i] / static_cast<double>(count)).to(t.dtype()));
    } else if (t.dtype() == kInt64) {
      // fairseq's `//=`: the floor of the mean, exact in int64.
      std::vector<int64_t> values = integer_sums[i];
      for (int64_t& v : values) v = v / count - (v % count != 0 && v < 0 ? 1 : 0);
      mean.emplace_back(name, from_vector(values, t.shape()));
    } else {
      mean.emplace_back(name, t);
    }
  }
  return mean;
}

}  // namespace sg::train
