// Chapter 1: a tensor is a view of storage.
//
// A Tensor is a cheap handle: a shared buffer (the storage) plus a shape, strides and an offset.
// Element [i, j] lives at storage[offset + i * stride[0] + j * stride[1]]. Transpose, slice,
// select and expand only change those numbers, so they copy nothing and share the storage.
//
// Run: ./build/examples/01_tensors        Test: ctest --test-dir build -L ch01
#include <fmt/format.h>

#include "autograd/autograd.h"
#include "example_args.h"

namespace {

int failures = 0;

void check(bool ok, const char* what) {
  fmt::print("  [{}] {}\n", ok ? "ok" : "FAILED", what);
  failures += ok ? 0 : 1;
}

void describe(const char* name, const sg::Tensor& t) {
  fmt::print("  {:<24} shape {:<10} strides {:<10} offset {}  contiguous: {}\n", name,
             fmt::format("{}", t.shape()), fmt::format("{}", t.strides()), t.storage_offset(),
             t.is_contiguous());
}

}  // namespace

int main(int argc, char** argv) {
  example::parse_args(argc, argv);  // no options of its own: refuses typos
  fmt::print("== 1. Storage + shape + strides + offset\n");
  sg::Tensor x = sg::arange(12, sg::kFloat32).view({3, 4});  // 0..11 as 3 rows of 4
  fmt::print("x =\n{}\n", x);
  describe("x", x);
  fmt::print("  x[1, 2] = storage[0 + 1*4 + 2*1] = storage[6] = {}\n", x.at<float>({1, 2}));

  fmt::print("\n== 2. Views share storage: write through a view, the base changes\n");
  sg::Tensor row = x.select(0, 1);  // row 1: shape [4], offset 4
  describe("row = x.select(0, 1)", row);
  {
    sg::NoGradGuard no_grad;  // in-place writes are for code that records no graph
    row.mul_(10.0);
  }
  fmt::print("after row.mul_(10):\nx =\n{}\n", x);
  check(row.shares_storage(x), "row and x share one storage");
  check(x.at<float>({1, 0}) == 40.0f, "x[1, 0] is now 40: the write reached the base");

  fmt::print("\n== 3. Transpose, permute, slice, select, expand: metadata only\n");
  sg::Tensor xt = x.transpose(0, 1);
  describe("x.transpose(0, 1)", xt);                     // strides swapped: [1, 4]
  describe("x.slice(1, 0, 4, 2)", x.slice(1, 0, 4, 2));  // every other column: stride 2
  describe("x.select(1, 3)", x.select(1, 3));            // last column: offset 3, stride 4
  sg::Tensor cube = sg::arange(24).view({2, 3, 4});
  describe("cube", cube);
  describe("cube.permute({2, 0, 1})", cube.permute({2, 0, 1}));
  sg::Tensor bias = sg::tensor({1, 2, 3}).unsqueeze(1);  // [3, 1]
  sg::Tensor wide = bias.expand({3, 4});                 // stride 0 repeats each element
  describe("bias.expand({3, 4})", wide);
  fmt::print("wide =\n{}\n  12 elements on screen, 3 in memory.\n", wide);
  check(wide.stride(1) == 0 && wide.shares_storage(bias), "expand: stride 0, same storage");
  check(xt.at<float>({2, 1}) == x.at<float>({1, 2}), "xt[2, 1] == x[1, 2]");

  fmt::print("\n== 4. is_contiguous() and contiguous()\n");
  sg::Tensor xc = xt.contiguous();  // a copy, laid out row-major
  describe("xt.contiguous()", xc);
  check(!xc.shares_storage(x), "contiguous() of a non-contiguous tensor is a new storage");
  check(x.contiguous().is_same(x), "contiguous() of a contiguous tensor is the tensor itself");

  fmt::print("\n== 5. view vs reshape\n");
  // view() never copies, so it needs strides that can express the new shape. The 12 elements of
  // xt in row-major order are not evenly spaced in storage: no single stride reaches them all.
  try {
    xt.view({12});
    check(false, "xt.view({12}) should have thrown");
  } catch (const sg::Error& e) {
    fmt::print("  xt.view({{12}}) throws: {}\n", e.what());
  }
  sg::Tensor flat_copy = xt.reshape({12});  // reshape = view when possible, else a copy
  sg::Tensor flat_view = x.reshape({12});
  fmt::print("  xt.reshape({{12}}) = {}\n", flat_copy);
  check(!flat_copy.shares_storage(x), "reshape of the transposed tensor copied");
  check(flat_view.shares_storage(x), "reshape of the contiguous tensor is a view");

  fmt::print("\n== 6. Factories and dtypes\n");
  sg::manual_seed(0);  // the same random numbers on every run and every machine
  fmt::print("zeros({{2, 3}}) =\n{}\n", sg::zeros({2, 3}));
  fmt::print("full({{2}}, 7, int64) = {}\n", sg::full({2}, 7, sg::kInt64));
  fmt::print("arange(0, 10, 2) = {}\n", sg::arange(0, 10, 2));
  fmt::print("eye(3, float64) =\n{}\n", sg::eye(3, sg::kFloat64));
  fmt::print("from_vector<double>({{1, 2, 3, 4}}, {{2, 2}}) =\n{}\n",
             sg::from_vector<double>({1, 2, 3, 4}, {2, 2}));
  fmt::print("randn({{2, 3}}) =\n{}\n", sg::randn({2, 3}));
  fmt::print("arange(5) > 2 = {}   (bool: 1 byte per element)\n", sg::arange(5) > 2);
  fmt::print("scalar_tensor(3.5) = {}   (0-d: shape [], one element)\n", sg::scalar_tensor(3.5));

  fmt::print("\n== 7. Printing: more than 1000 elements are summarised with ...\n");
  fmt::print("{}\n", sg::arange(1200).view({12, 100}));
  fmt::print("{}\n", sg::ones({2}, sg::TensorOptions().requires_grad(true)));

  fmt::print("\n{}\n", failures == 0 ? "All checks passed." : "Some checks FAILED.");
  return failures == 0 ? 0 : 1;
}
