// Printing a tensor the way PyTorch does:
//   tensor([[ 1.0000, -0.5000],
//           [ 2.0000,  3.0000]], dtype=float64, requires_grad=true)
// Tensors of more than 1000 elements show the first and last 3 entries of each dim around "...".
#include <algorithm>
#include <cmath>

#include "autograd/grad_mode.h"
#include "autograd/node.h"
#include "autograd/tensor.h"

namespace sg {

namespace {

constexpr int64_t kSummarizeAbove = 1000;
constexpr int64_t kEdgeItems = 3;

struct Printer {
  const std::vector<double>& values;  // row-major copy
  const Shape& shape;
  DType dtype;
  bool summarize;
  int width = 0;
  bool use_exponent = false;

  std::string format_value(double v) const {
    if (dtype == kBool) return v != 0 ? "true" : "false";
    if (dtype == kInt64) return fmt::format("{}", static_cast<int64_t>(v));
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    return use_exponent ? fmt::format("{:.4e}", v) : fmt::format("{:.4f}", v);
  }

  // Indices shown along a dim of `size`: all, or the first and last kEdgeItems (-1 marks "...").
  std::vector<int64_t> shown(int64_t size) const {
    std::vector<int64_t> out;
    if (!summarize || size <= 2 * kEdgeItems) {
      for (int64_t i = 0; i < size; ++i) out.push_back(i);
      return out;
    }
    for (int64_t i = 0; i < kEdgeItems; ++i) out.push_back(i);
    out.push_back(-1);
    for (int64_t i = size - kEdgeItems; i < size; ++i) out.push_back(i);
    return out;
  }

  void measure(size_t dim, int64_t offset) {
    if (dim == shape.size()) {
      width = std::max(width, static_cast<int>(format_value(values[offset]).size()));
      return;
    }
    int64_t inner = numel_of(Shape(shape.begin() + dim + 1, shape.end()));
    for (int64_t i : shown(shape[dim])) {
      if (i >= 0) measure(dim + 1, offset + i * inner);
    }
  }

  void print(std::string& out, size_t dim, int64_t offset, int indent) const {
    if (dim == shape.size()) {
      out += fmt::format("{:>{}}", format_value(values[offset]), width);
      return;
    }
    int64_t inner = numel_of(Shape(shape.begin() + dim + 1, shape.end()));
    out += '[';
    bool first = true;
    const bool last_dim = dim + 1 == shape.size();
    for (int64_t i : shown(shape[dim])) {
      if (!first) {
        out += ',';
        if (last_dim) {
          out += ' ';
        } else {
          out += std::string(shape.size() - dim - 1, '\n');
          out += std::string(indent + 1, ' ');
        }
      }
      first = false;
      if (i < 0) {
        out += "...";
        continue;
      }
      print(out, dim + 1, offset + i * inner, indent + 1);
    }
    out += ']';
  }
};

}  // namespace

std::string Tensor::str() const {
  if (!defined()) return "tensor(undefined)";
  std::vector<double> values = to_vector<double>();
  Printer p{values, shape(), dtype(), numel() > kSummarizeAbove};
  if (is_floating(dtype())) {
    // Very large or very small magnitudes switch to scientific notation, as PyTorch does.
    double max_abs = 0, min_abs = INFINITY;
    for (double v : values) {
      if (!std::isfinite(v) || v == 0) continue;
      max_abs = std::max(max_abs, std::abs(v));
      min_abs = std::min(min_abs, std::abs(v));
    }
    p.use_exponent = max_abs >= 1e8 || (max_abs > 0 && max_abs / min_abs > 1e3 && min_abs < 1e-4);
  }
  const std::string prefix = "tensor(";
  std::string body;
  if (dim() == 0) {
    body = p.format_value(values[0]);
  } else if (numel() == 0) {
    body = "[]";
  } else {
    p.measure(0, 0);
    p.print(body, 0, 0, static_cast<int>(prefix.size()));
  }
  std::vector<std::string> suffix;
  if (numel() == 0 && dim() != 1) suffix.push_back(fmt::format("size={}", shape()));
  if (dtype() != kFloat32 && dtype() != kInt64 && dtype() != kBool) {
    suffix.push_back(fmt::format("dtype={}", dtype()));
  }
  if (dtype() == kInt64 && numel() == 0) suffix.push_back("dtype=int64");
  if (!device().is_cpu()) suffix.push_back(fmt::format("device='{}'", device()));
  if (grad_fn()) {
    suffix.push_back(fmt::format("grad_fn=<{}>", grad_fn()->name()));
  } else if (requires_grad()) {
    suffix.push_back("requires_grad=true");
  }
  std::string out = prefix + body;
  for (const std::string& s : suffix) out += ", " + s;
  return out + ")";
}

}  // namespace sg
