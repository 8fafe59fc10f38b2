// Checkpoints: a module's state_dict (or an optimizer's state) in a safetensors file, keyed by the
// dotted names, with the model config in the header's metadata.
//
//   sg::nn::save(model, "ckpt.safetensors", {{"config", options_text}});
//   sg::nn::Metadata meta = sg::nn::load(fresh_model, "ckpt.safetensors");  // same config
//   sg::nn::save(opt, "opt.safetensors");  sg::nn::load(opt, "opt.safetensors");
//
// Loading is all or nothing: the file is validated completely, then compared with the model, and
// only when every name, shape and dtype matches are the values copied in. Otherwise one sg::Error
// lists every missing, unexpected, mis-shaped and mis-typed tensor, and the model is unchanged.
#pragma once

#include <string>

#include "nn/module.h"
#include "nn/safetensors.h"

namespace sg::optim {
class Optimizer;  // nn/optim/optimizer.h
}  // namespace sg::optim

namespace sg::nn {

// Writes module.state_dict() (parameters and buffers, from any device) atomically (AtomicFile).
void save(const Module& module, const std::string& path, const Metadata& metadata = {});
// Copies the file's tensors into the module's parameters and buffers in place (the handles held
// by layers and optimizers stay valid; each tensor keeps its device). Returns the file's metadata.
Metadata load(Module& module, const std::string& path);
// The same from tensors already read (e.g. a file that holds more than the module's state);
// `source` names them in errors.
void load(Module& module, const NamedTensors& tensors, const std::string& source);

// An optimizer's state() (step counts, lr, per-parameter moments), to resume training exactly:
// load into an optimizer built over the same parameters, in the same order and groups, with the
// same options.
// load_state() checks the entries before changing anything; its errors are reported with the path.
void save(const optim::Optimizer& optimizer, const std::string& path,
          const Metadata& metadata = {});
Metadata load(optim::Optimizer& optimizer, const std::string& path);

}  // namespace sg::nn
