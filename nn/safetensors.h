// The safetensors file format: a named list of tensors and a string-to-string metadata map in one
// file that PyTorch (safetensors.torch.load_file) and the Hugging Face tools read.
//
//   sg::nn::save_safetensors("w.safetensors", {{"w", sg::randn({2, 3})}}, {{"step", "100"}});
//   auto file = sg::nn::load_safetensors("w.safetensors");
//   // file.tensors[0] is {"w", tensor of shape [2, 3]}, file.metadata.at("step") == "100"
//
// Layout: 8 bytes of little-endian u64 header length N, then N bytes of UTF-8 JSON
//   {"w": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]}, "__metadata__": {...}}
// (padded with spaces so the data starts 8-byte aligned), then the data: each tensor contiguous,
// little-endian, at data_offsets relative to the end of the header. Offsets tile the data exactly.
#pragma once

#include <map>
#include <string>

#include "autograd/autograd.h"
#include "nn/module.h"

namespace sg::nn {

using Metadata = std::map<std::string, std::string>;

// Writes atomically: the bytes go to "<path>.tmp-<pid>", which is flushed to disk (fsync) and then
// renamed over `path`, so a crash or an error never leaves a half-written file and an existing file
// at `path` stays as it was until the new one is complete. Tensors may live on any device and be
// non-contiguous views; names must be unique, non-empty and not "__metadata__".
void save_safetensors(const std::string& path, const NamedTensors& tensors,
                      const Metadata& metadata = {});

struct SafetensorsFile {
  NamedTensors tensors;  // CPU tensors, in the order of their data in the file
  Metadata metadata;
};

// Reads and validates the whole file before returning anything: the header length against the file
// size, the JSON, every dtype (F32, F64, I64, BOOL, BF16), shape and data_offsets (inside the data,
// sized shape * itemsize, no gaps or overlaps), and bool bytes (0 or 1). Every failure is an
// sg::Error naming the path and what is wrong.
SafetensorsFile load_safetensors(const std::string& path);

}  // namespace sg::nn
