#include "train/average_checkpoints.h"

#include <filesystem>
#include <map>

#include "nn/safetensors.h"
#include "train/checkpoint.h"
#include "train/metadata.h"
#include "train/output_paths.h"
#include "train/run_directory.h"
#include "train/saved_run_state.h"

namespace sg::train {

namespace fs = std::filesystem;

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

nn::NamedTensors average_checkpoints(const std::vector<std::string>& paths,
                                     const std::function<void(const Checkpoint&)>& each_file) {
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
    if (each_file) each_file(c);
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

namespace {

// The files a request names: its paths, or its run's newest step checkpoints.
std::vector<std::string> files_to_average(const AverageRequest& request) {
  SG_CHECK(request.paths.empty() != request.run_dir.empty(),
           "average: give either checkpoints or a run directory, not {}",
           request.paths.empty() ? "neither" : "both");
  if (!request.paths.empty()) return request.paths;
  std::vector<std::string> paths;
  for (const auto& [_, path] : RunDirectory(request.run_dir).newest_step_checkpoints(request.last))
    paths.push_back(path);
  SG_CHECK(!paths.empty(),
           "average: {} has no step checkpoints (checkpoint-<step>.safetensors: train with "
           "--average-last K)",
           request.run_dir);
  return paths;
}

}  // namespace

nn::Metadata save_average(const AverageRequest& request, const std::vector<std::string>& must_agree,
                          const std::function<void(const Checkpoint&)>& check_file) {
  const std::string& out = request.out;
  SG_CHECK(!out.empty(), "average: no output file given");
  // A run's own step names are its to write and prune: a mean saved as one would be deleted by
  // the run's next step checkpoint, or taken for a step by the next `average --run`.
  SG_CHECK(!RunDirectory::step_of(fs::path(out).filename().string()),
           "average: --out {} has a step checkpoint's name (checkpoint-<step>.safetensors), which "
           "runs write, prune and average; name the mean otherwise (averaged.safetensors)",
           out);
  SG_CHECK(request.overwrite || !fs::exists(out),
           "average: --out {} exists; add --overwrite to replace it", out);
  const std::vector<std::string> paths = files_to_average(request);
  for (size_t i = 0; i < paths.size(); ++i) {
    SG_CHECK(!same_file(out, paths[i]),
             "average: --out {} is one of the checkpoints averaged; write the mean elsewhere", out);
    for (size_t j = 0; j < i; ++j) {
      SG_CHECK(!same_file(paths[i], paths[j]),
               "average: {} is given twice (it would weigh double in the mean)", paths[i]);
    }
  }
  nn::Metadata first, metadata;
  std::vector<int64_t> steps;
  const nn::NamedTensors mean = average_checkpoints(paths, [&](const Checkpoint& file) {
    if (check_file) check_file(file);
    const auto weights = file.metadata.find("weights");
    SG_CHECK(weights == file.metadata.end() || weights->second != "average",
             "average: {} is itself a mean of checkpoints; average the step checkpoints themselves "
             "(a mean of means weighs them unequally)",
             file.path);
    steps.push_back(MetadataReader(file.metadata, file.path).integer("step"));
    if (steps.size() == 1) first = file.metadata;
    for (const std::string& key : must_agree) {
      const auto value = [&](const nn::Metadata& md) {
        const auto it = md.find(key);
        return it == md.end() ? std::string("missing") : "'" + it->second + "'";
      };
      SG_CHECK(value(file.metadata) == value(first),
               "average: '{}' is {} in {} but {} in {}: only checkpoints of one model can be "
               "averaged",
               key, value(file.metadata), file.path, value(first), paths.front());
    }
    metadata = file.metadata;  // the newest's, in the end
  });
  mark_as_average(metadata, steps);
  nn::save_safetensors(out, mean, metadata);
  return metadata;
}

}  // namespace sg::train
