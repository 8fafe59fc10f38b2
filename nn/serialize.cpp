#include "nn/serialize.h"

#include <map>
#include <set>
#include <vector>

#include "nn/optim/optimizer.h"

namespace sg::nn {

namespace {

std::string join(const std::vector<std::string>& items, const char* separator) {
  std::string out;
  for (const std::string& item : items) out += (out.empty() ? "" : separator) + item;
  return out;
}

// Whether every value of `from` is a value of `to`: bfloat16 -> float32 -> float64. A checkpoint
// of such a dtype loads (a bfloat16 file into a float32 model); a narrowing one (float64 into
// float32) would round every weight without a word, and is a mismatch.
bool widens_exactly(DType from, DType to) {
  const auto rank = [](DType d) {
    return d == kBFloat16 ? 1 : d == kFloat32 ? 2 : d == kFloat64 ? 3 : 0;
  };
  return rank(from) > 0 && rank(from) < rank(to);
}

// Every difference between the checkpoint and the model, as one readable list (empty: they
// match). All of them at once: fixing a config one error per run is slow.
std::string describe_mismatches(const NamedTensors& file, const NamedTensors& model) {
  std::map<std::string, Tensor> in_file(file.begin(), file.end());
  std::vector<std::string> missing, unexpected, mismatched;
  std::set<std::string> in_model;
  for (const auto& [name, target] : model) {
    in_model.insert(name);
    auto it = in_file.find(name);
    if (it == in_file.end()) {
      missing.push_back(name);
      continue;
    }
    const Tensor& source = it->second;
    if (source.shape() != target.shape()) {
      mismatched.push_back(fmt::format("shape mismatch for {}: checkpoint {} vs model {}", name,
                                       source.shape(), target.shape()));
    } else if (source.dtype() != target.dtype() &&
               !widens_exactly(source.dtype(), target.dtype())) {
      mismatched.push_back(fmt::format("dtype mismatch for {}: checkpoint {} vs model {}", name,
                                       source.dtype(), target.dtype()));
    }
  }
  for (const auto& [name, _] : file) {
    if (!in_model.contains(name)) unexpected.push_back(name);
  }
  std::vector<std::string> parts;
  if (!missing.empty()) parts.push_back("missing " + join(missing, ", "));
  if (!unexpected.empty()) parts.push_back("unexpected " + join(unexpected, ", "));
  for (std::string& m : mismatched) parts.push_back(std::move(m));
  return join(parts, "; ");
}

}  // namespace

void save(const Module& module, const std::string& path, const Metadata& metadata) {
  save_safetensors(path, module.state_dict(), metadata);
}

Metadata load(Module& module, const std::string& path) {
  SafetensorsFile file = load_safetensors(path);
  load(module, file.tensors, path);
  return file.metadata;
}

void load(Module& module, const NamedTensors& tensors, const std::string& source) {
  // A name twice: the check below saw the first, the copy took the last (and broadcast it).
  std::set<std::string> seen;
  for (const auto& [name, t] : tensors) {
    SG_CHECK(seen.insert(name).second, "load: checkpoint {} holds '{}' twice", source, name);
    SG_CHECK(t.defined(), "load: checkpoint {} holds '{}' as an undefined tensor", source, name);
  }
  NamedTensors model = module.state_dict();
  std::string mismatches = describe_mismatches(tensors, model);
  SG_CHECK(mismatches.empty(), "load: checkpoint {} does not match the model: {}", source,
           mismatches);

  // Stage every tensor on its target device first, so a failure there (e.g. out of device memory)
  // still leaves the model untouched; the copies below cannot fail.
  std::map<std::string, Tensor> staged;
  for (const auto& [name, t] : tensors) staged[name] = t;
  // A tensor of a narrower floating type is widened (widens_exactly).
  for (const auto& [name, target] : model) {
    Tensor& t = staged[name];
    if (t.dtype() != target.dtype()) t = t.to(target.dtype());
    t = t.to(target.device());
  }

  NoGradGuard no_grad;  // parameters require grad; writing them is not part of any graph
  for (auto& [name, target] : model) target.copy_(staged[name]);
}

void save(const optim::Optimizer& optimizer, const std::string& path, const Metadata& metadata) {
  save_safetensors(path, optimizer.state(), metadata);
}

Metadata load(optim::Optimizer& optimizer, const std::string& path) {
  SafetensorsFile file = load_safetensors(path);
  try {
    optimizer.load_state(file.tensors);
  } catch (const Error& e) {
    SG_FAIL("load: optimizer checkpoint {} does not match the {} optimizer: {}", path,
            optimizer.name(), e.what());
  }
  return file.metadata;
}

}  // namespace sg::nn
