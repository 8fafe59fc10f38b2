// Inverted dropout (Srivastava et al. 2014, as PyTorch does it).
//
// In training each element is zeroed with probability p and the survivors are scaled by
// 1 / (1 - p), so E[y] = x and evaluation needs no rescaling: there dropout is the identity.
//   y = x ⊙ mask / (1 - p),   mask_i ~ Bernoulli(1 - p)
// It is a multiply by a fixed random tensor, so mul's backward gives dx = g ⊙ mask / (1 - p).
// The uniform numbers behind the mask are computed on x's device by a counter-based kernel (Note
// [Counter-based random numbers] in autograd/generator.h) from the default generator, whose state
// moves past them: sg::manual_seed(s) makes the same elements drop on every run and every device,
// the same numbers as sg::rand() would draw.
#include "autograd/cuda_graph.h"
#include "autograd/ops/internal.h"

namespace sg {

Tensor dropout(const Tensor& x, double p, bool training, CallSite site) {
  const CallSiteScope call_site(site);
  SG_PROFILE_OP("dropout");
  SG_CHECK(p >= 0.0 && p <= 1.0, "dropout: probability p must be in [0, 1], got {}", p);
  SG_CHECK(x.is_floating_point(), "dropout: expected a floating point tensor, got {}", x.dtype());
  detail::check_not_bfloat16("dropout", {x});
  if (!training || p == 0.0) return x;
  // Everything dropped: 1 / (1 - p) would be inf and 0 * inf NaN, so multiply by 0 instead.
  if (p == 1.0) return x * zeros({}, x.options());

  // u ~ U[0, 1), so P(u < 1 - p) = 1 - p: the element survives.
  Tensor u = empty(x.shape(), x.options());
  const auto count = static_cast<uint64_t>(x.numel());
  if (cuda::is_capturing(x.device())) {
    // In a CUDA graph the kernel reads its state from the device, and each replay draws it from
    // the generator first, as this eager step would have: replays drop what eager steps drop.
    Tensor state = [&] {
      const cuda::ReplayInputScope written_before_each_replay;
      return empty({1}, TensorOptions(kInt64).device(x.device()));
    }();
    cuda::before_each_replay(x.device(), [state, count] {
      const uint64_t drawn = default_generator().take(count);
      backend_for(state.device()).copy_from_host(state.raw_data(), &drawn, sizeof(drawn));
    });
    SG_CHECK(backend_for(x.device()).uniform_from_device(u, state),
             "dropout: the {} backend cannot draw inside a CUDA graph", x.device());
  } else {
    backend_for(x.device()).uniform(u, default_generator().take(count));
  }
  Tensor keep = u.lt(1.0 - p);
  Tensor scaled_mask = keep.to(x.dtype()) / (1.0 - p);
  return x * scaled_mask;
}

}  // namespace sg
