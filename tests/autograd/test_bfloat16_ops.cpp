// Every public op of autograd/ops.h (and the Tensor methods and in-place ops) given a bfloat16
// input: the ops that move or convert values work and give the float32 result's bits rounded to
// bfloat16; every other op refuses with an sg::Error that names the op and bfloat16 (Note
// [bfloat16 is for storage] in autograd/dtype.h), on both CPU backends. A new op lands in one list
// or the other.
#include <functional>
#include <string>
#include <vector>

#include "tests/support/testing.h"

namespace sg {
namespace {

using OpFn = std::function<Tensor(const Tensor&)>;
struct OpCase {
  std::string name;  // the op, as its error message must start
  OpFn run;
};

// x [3, 4] in (0.5, 1.7): safe for log, sqrt and pow; every op below gets it as bfloat16, or (for
// the supported ones) as float32 to compare with.
Tensor input() { return (arange(0, 12, 1, kFloat32).view({3, 4}) * 0.1 + 0.55).to(kBFloat16); }
Tensor mask() { return tensor({{1.0, 0.0, 1.0, 1.0}}).to(kBool); }  // [1, 4]
Tensor ids() { return tensor({2.0, 0.0}, kInt64); }

std::vector<OpCase> supported_ops() {
  return {
      {"view",
       [](const Tensor& x) {
         return x.view({4, 3});
       }},
      {"reshape", [](const Tensor& x) { return x.t().reshape({12}); }},
      {"transpose", [](const Tensor& x) { return x.transpose(0, 1).contiguous(); }},
      {"permute",
       [](const Tensor& x) {
         return x.permute({1, 0}).contiguous();
       }},
      {"unsqueeze", [](const Tensor& x) { return x.unsqueeze(1); }},
      {"squeeze", [](const Tensor& x) { return x.unsqueeze(0).squeeze(); }},
      {"expand",
       [](const Tensor& x) {
         return x.unsqueeze(0).expand({2, 3, 4}).contiguous();
       }},
      {"slice", [](const Tensor& x) { return x.slice(1, 0, 4, 2).contiguous(); }},
      {"narrow", [](const Tensor& x) { return x.narrow(0, 1, 2); }},
      {"select", [](const Tensor& x) { return x.select(1, 2); }},
      {"flatten", [](const Tensor& x) { return x.flatten(); }},
      {"clone", [](const Tensor& x) { return x.clone(); }},
      {"to", [](const Tensor& x) { return x.to(kFloat64); }},
      {"where", [](const Tensor& x) { return where(mask(), x, x.narrow(0, 0, 1)); }},
      {"masked_fill", [](const Tensor& x) { return x.masked_fill(mask(), 0.3); }},
      {"tril", [](const Tensor& x) { return x.tril(); }},
      {"triu", [](const Tensor& x) { return x.triu(1); }},
      {"index_select", [](const Tensor& x) { return x.index_select(1, ids()); }},
      {"gather",
       [](const Tensor& x) {
         return x.gather(1, ids().view({1, 2}).expand({3, 2}));
       }},
      {"embedding", [](const Tensor& x) { return embedding(x, ids()); }},
      {"cat",
       [](const Tensor& x) {
         return cat({x, x}, 1);
       }},
      {"stack",
       [](const Tensor& x) {
         return stack({x, x});
       }},
      {"split", [](const Tensor& x) { return x.split(2, 1)[1].contiguous(); }},
      {"chunk", [](const Tensor& x) { return x.chunk(3, 0)[2]; }},
      {"copy_",
       [](const Tensor& x) {
         return zeros({3, 4}, x.dtype()).copy_(x);
       }},
      {"fill_", [](const Tensor& x) { return x.clone().fill_(0.7); }},
      {"zero_", [](const Tensor& x) { return x.clone().zero_(); }},
      // A float32 operand promotes the op to float32 (bfloat16 converts exactly).
      {"add", [](const Tensor& x) { return x + full({4}, 0.25, kFloat32); }},
  };
}

std::vector<OpCase> refused_ops() {
  const Tensor f = ones({4, 2});
  return {
      {"neg", [](const Tensor& x) { return -x; }},
      {"exp", [](const Tensor& x) { return x.exp(); }},
      {"log", [](const Tensor& x) { return x.log(); }},
      {"sqrt", [](const Tensor& x) { return x.sqrt(); }},
      {"rsqrt", [](const Tensor& x) { return x.rsqrt(); }},
      {"abs", [](const Tensor& x) { return x.abs(); }},
      {"sign", [](const Tensor& x) { return sign(x); }},
      {"tanh", [](const Tensor& x) { return x.tanh(); }},
      {"sigmoid", [](const Tensor& x) { return x.sigmoid(); }},
      {"relu", [](const Tensor& x) { return x.relu(); }},
      {"gelu", [](const Tensor& x) { return gelu(x); }},
      {"pow", [](const Tensor& x) { return x.pow(3.0); }},
      {"square", [](const Tensor& x) { return square(x); }},
      {"clamp", [](const Tensor& x) { return x.clamp(0.6, 1.0); }},
      {"logical_not", [](const Tensor& x) { return x.logical_not(); }},
      {"add", [](const Tensor& x) { return x + x; }},
      {"add", [](const Tensor& x) { return x + 1.0; }},
      {"sub", [](const Tensor& x) { return x - x; }},
      {"mul", [](const Tensor& x) { return x * x; }},
      {"div", [](const Tensor& x) { return x / x; }},
      {"pow", [](const Tensor& x) { return x.pow(x); }},
      {"maximum", [](const Tensor& x) { return maximum(x, x); }},
      {"minimum", [](const Tensor& x) { return minimum(x, x); }},
      {"eq", [](const Tensor& x) { return x == x; }},
      {"lt", [](const Tensor& x) { return x < 1.0; }},
      {"logical_and", [](const Tensor& x) { return logical_and(x, x); }},
      {"sum", [](const Tensor& x) { return x.sum(); }},
      {"sum", [](const Tensor& x) { return x.sum(1); }},
      {"mean", [](const Tensor& x) { return x.mean(0); }},
      {"var", [](const Tensor& x) { return x.var({1}); }},
      {"amax", [](const Tensor& x) { return x.amax(1); }},
      {"amin", [](const Tensor& x) { return x.amin(); }},
      {"max", [](const Tensor& x) { return x.max(1).first; }},
      {"min", [](const Tensor& x) { return x.min(0).first; }},
      {"argmax", [](const Tensor& x) { return x.argmax(1); }},
      {"argmin", [](const Tensor& x) { return x.argmin(0); }},
      {"sum_to",
       [](const Tensor& x) {
         return sum_to(x, {1, 4});
       }},
      {"matmul", [](const Tensor& x) { return x.matmul(x.t()); }},
      {"matmul", [f](const Tensor& x) { return matmul(x, f); }},
      {"softmax", [](const Tensor& x) { return x.softmax(-1); }},
      {"log_softmax", [](const Tensor& x) { return x.log_softmax(0); }},
      {"masked_softmax", [](const Tensor& x) { return masked_softmax(x, mask()); }},
      {"fused_linear", [](const Tensor& x) { return fused_linear(x, x, x.select(1, 0)); }},
      {"fused_linear",
       [](const Tensor& x) {
         return fused_linear(x, ones({2, 4}));
       }},
      {"linear_composed", [](const Tensor& x) { return linear_composed(x, x); }},
      {"fused_attention",
       [](const Tensor& x) {
         const Tensor q = x.view({1, 1, 3, 4});
         return fused_attention(q, q, q, Tensor(), 0.5).first;
       }},
      {"attention_composed",
       [](const Tensor& x) {
         const Tensor q = x.view({1, 1, 3, 4});
         return attention_composed(q, q, q, Tensor(), 0.5).first;
       }},
      {"fused_layer_norm", [](const Tensor& x) { return fused_layer_norm(x, {4}); }},
      {"layer_norm_composed", [](const Tensor& x) { return layer_norm_composed(x, {4}); }},
      {"dropout", [](const Tensor& x) { return dropout(x, 0.5, true); }},
      {"cross_entropy", [](const Tensor& x) { return cross_entropy(x, zeros({3}, kInt64)); }},
      {"add_", [](const Tensor& x) { return x.clone().add_(x); }},
      {"mul_", [](const Tensor& x) { return x.clone().mul_(2.0); }},
      {"div_", [](const Tensor& x) { return x.clone().div_(2.0); }},
      {"addcmul_", [](const Tensor& x) { return x.clone().addcmul_(x, x); }},
      {"adam_update_",
       [](const Tensor& x) {
         const Tensor p = x.clone(), m = zeros_like(x), v = zeros_like(x);
         adam_update_(p, x, m, v, 1e-3, 0.9, 0.999, 1e-8, 0.0, false, 1);
         return p;
       }},
      // The backward of an op on a bfloat16 tensor that requires grad: the embedding's gradient
      // is an index_add of bfloat16 rows.
      {"backward of 'embedding': index_add",
       [](const Tensor& x) {
         Tensor leaf = x.detach().requires_grad_(true);
         embedding(leaf, ids()).to(kFloat32).sum().backward();
         return leaf.grad();
       }},
  };
}

// The op on float32 input, rounded to bfloat16 where it returns floats: what the op must give on
// bfloat16 input when it moves or converts values only.
Tensor expected_from_float32(const OpFn& op, const Tensor& x) {
  const Tensor y = op(x.to(kFloat32));
  return y.dtype() == kFloat32 && op(x).dtype() == kBFloat16 ? y.to(kBFloat16) : y;
}

void check_every_op() {
  const Tensor x = input();
  for (const OpCase& c : supported_ops()) {
    SCOPED_TRACE(c.name);
    Tensor y;
    ASSERT_NO_THROW(y = c.run(x));
    const Tensor want = expected_from_float32(c.run, x);
    ASSERT_EQ(y.dtype(), want.dtype());
    if (y.dtype() == kBFloat16 || y.is_floating_point()) {
      EXPECT_TRUE(testing::tensors_near(y.to(kFloat64), want.to(kFloat64), 0, 0));
    }
  }
  for (const OpCase& c : refused_ops()) {
    SCOPED_TRACE(c.name);
    try {
      (void)c.run(x);
      ADD_FAILURE() << c.name << " ran on a bfloat16 tensor instead of refusing it";
    } catch (const Error& e) {
      const std::string message = e.what();
      EXPECT_EQ(message.rfind(c.name + ":", 0), 0u) << "message was: " << message;
      EXPECT_NE(message.find("bfloat16"), std::string::npos) << "message was: " << message;
    }
  }
}

TEST(BFloat16OpsTest, EveryOpWorksOrRefusesByNameOnTheReferenceKernels) {
  CpuKernelsGuard reference(CpuKernels::Reference);
  check_every_op();
}

TEST(BFloat16OpsTest, EveryOpWorksOrRefusesByNameOnTheFastKernels) {
  CpuKernelsGuard fast(CpuKernels::Fast);
  testing::at_every_cpu_feature_level(check_every_op);
}

TEST(BFloat16OpsTest, GradientsFlowThroughConversionsAndViews) {
  // x.to(bfloat16).to(float32) rounds in the forward; its gradient passes straight through (the
  // gradient of each conversion is the other conversion), as in PyTorch.
  Tensor x = tensor({0.1, 1.0 / 3.0, 2.0}).requires_grad_(true);
  Tensor y = (x.to(kBFloat16).narrow(0, 1, 2).to(kFloat32) * tensor({3.0, 5.0})).sum();
  y.backward();
  EXPECT_EQ(x.grad().to_vector<float>(), (std::vector<float>{0.0f, 3.0f, 5.0f}));
  EXPECT_EQ(x.grad().dtype(), kFloat32);
  Tensor leaf = tensor({1.5, 2.5}).to(kBFloat16).requires_grad_(true);
  (leaf.to(kFloat32) * 2.0).sum().backward();
  EXPECT_EQ(leaf.grad().dtype(), kBFloat16);
  EXPECT_EQ(leaf.grad().to_vector<float>(), (std::vector<float>{2.0f, 2.0f}));
}

}  // namespace
}  // namespace sg
