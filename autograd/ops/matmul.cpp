// matmul: the matrix product, with PyTorch's rules for every rank.
//
//   [K]       · [K]          -> []            a dot product
//   [M, K]    · [K, N]       -> [M, N]
//   [K]       · [..., K, N]  -> [..., N]      a becomes the row [1, K]; that 1 is removed after
//   [..., M, K] · [K]        -> [..., M]      b becomes the column [K, 1]; likewise
//   [..., M, K] · [..., K, N] -> [..., M, N]  batch dims (the "...") broadcast like a + b
//
// Letters: M = rows of a, K = the inner size that is summed over, N = columns of b, B = the
// number of matrices once the broadcast batch dims are flattened into one.
//
// Every case ends in one call of the backend's gemm on [B, M, K] · [B, K, N] (a stack times one
// matrix, as in a Linear layer, becomes one tall [1, B*M, K] · [1, K, N]). Nothing is copied on
// the way there: broadcasting is a stride of 0 along the batch, and a transposed operand stays a
// transposed view, which BLAS reads directly (backend/cpu/gemm.cpp). The one exception is an
// operand broadcast in some batch dims but not others, whose batch cannot be one strided dim.
// Under autocast (autograd/autocast.h) float32 products call gemm_bfloat16 instead, forward and
// backward alike.
#include <optional>

#include "autograd/ops/internal.h"

namespace sg {

namespace {

void check_operands(const Tensor& a, const Tensor& b) {
  SG_CHECK(a.defined() && b.defined(), "matmul: got an undefined tensor");
  SG_CHECK(a.dim() >= 1 && b.dim() >= 1,
           "matmul: both arguments need at least 1 dimension, got shapes {} ({}-D) and {} ({}-D)",
           a.shape(), a.dim(), b.shape(), b.dim());
  detail::check_floating("matmul", a);
  detail::check_floating("matmul", b);
  SG_CHECK(a.dtype() == b.dtype(), "matmul: expected both {}, got {} and {}", a.dtype(), a.dtype(),
           b.dtype());
  detail::check_same_device("matmul", {a, b});
  // The inner size: the last dim of a, and the first (1-D) or second-to-last dim of b.
  const int64_t k_a = a.size(-1);
  const int64_t k_b = b.dim() == 1 ? b.size(0) : b.size(-2);
  SG_CHECK(k_a == k_b, "matmul: shapes {} and {} cannot be multiplied ({} != {})", a.shape(),
           b.shape(), k_a, k_b);
}

// True when dims [start, end) of x can be read as one dim with a single stride: stepping through
// them in row-major order moves through memory in equal steps. Broadcast dims (stride 0) merge
// with each other; a broadcast dim next to a real one does not.
bool dims_merge(const Tensor& x, int64_t start, int64_t end) {
  std::optional<int64_t> needed;  // the stride the next outer dim must have
  for (int64_t d = end - 1; d >= start; --d) {
    if (x.size(d) == 0) return true;  // no elements: any layout will do
    if (x.size(d) == 1) continue;     // never stepped along, so its stride does not matter
    if (needed && x.stride(d) != *needed) return false;
    needed = x.stride(d) * x.size(d);
  }
  return true;
}

// x with dims [start, end) read as one dim, their product in size (dims_merge must hold); an
// empty range inserts a dim of size 1. A view that is not recorded: matmul records itself as one
// node, so the reshaping it does on the way to gemm stays out of the graph (and costs no node).
Tensor merge_dims(const Tensor& x, int64_t start, int64_t end) {
  Shape shape(x.shape().begin(), x.shape().begin() + start);
  Strides strides(x.strides().begin(), x.strides().begin() + start);
  int64_t size = 1, stride = 0;
  for (int64_t d = start; d < end; ++d) {
    size *= x.size(d);
    if (x.size(d) != 1) stride = x.stride(d);  // the innermost dim that is stepped along
  }
  shape.push_back(size);
  strides.push_back(stride);
  shape.insert(shape.end(), x.shape().begin() + end, x.shape().end());
  strides.insert(strides.end(), x.strides().begin() + end, x.strides().end());
  return detail::make_view(x, std::move(shape), std::move(strides), x.storage_offset());
}

// A vector as a matrix: a 1-D left operand is a row [1, K], a 1-D right operand a column [K, 1].
Tensor as_left_matrix(const Tensor& a) { return a.dim() == 1 ? merge_dims(a, 0, 0) : a; }
Tensor as_right_matrix(const Tensor& b) { return b.dim() == 1 ? merge_dims(b, 1, 1) : b; }

// The batch dims of a matrix stack [.., rows, cols]: everything but the last two.
Shape batch_dims(const Tensor& m) { return Shape(m.shape().begin(), m.shape().end() - 2); }

// The broadcast batch dims of a [.., M, K] and b [.., K, N] (vectors already made matrices).
Shape broadcast_batch(const Tensor& a, const Tensor& b) {
  const Shape batch_a = batch_dims(a), batch_b = batch_dims(b);
  const size_t n = std::max(batch_a.size(), batch_b.size());
  Shape batch(n);
  for (size_t i = 0; i < n; ++i) {
    // Walk from the right: i counts from the last batch dim.
    const int64_t sa = i < batch_a.size() ? batch_a[batch_a.size() - 1 - i] : 1;
    const int64_t sb = i < batch_b.size() ? batch_b[batch_b.size() - 1 - i] : 1;
    SG_CHECK(sa == sb || sa == 1 || sb == 1,
             "matmul: shapes {} and {} cannot be multiplied: batch dims {} and {} cannot be "
             "broadcast ({} vs {})",
             a.shape(), b.shape(), batch_a, batch_b, sa, sb);
    batch[n - 1 - i] = sa == 1 ? sb : sa;
  }
  return batch;
}

// x [.., rows, cols] expanded to `batch` and read as [B, rows, cols]. A view whenever the batch
// dims merge (always for one batch dim, or an operand broadcast over all of them); otherwise this
// operand alone is copied, the price of a batch broadcast in some dims only ([2, 1] vs [2, 5]).
Tensor as_batch_of_matrices(const Tensor& x, const Shape& batch) {
  Shape full = batch;
  full.push_back(x.size(-2));
  full.push_back(x.size(-1));
  Tensor expanded = detail::broadcast_view(x, full);  // stride 0 where x repeats: nothing copied
  const auto nbatch = static_cast<int64_t>(batch.size());
  if (!dims_merge(expanded, 0, nbatch)) {
    Tensor copy = empty(full, x.options());
    backend_for(x.device()).copy(expanded, copy);
    expanded = copy;
  }
  return merge_dims(expanded, 0, nbatch);
}

// out [batch.., M, N] (contiguous) = a [.., M, K] · b [.., K, N], batch dims broadcast; the
// operands rounded to bfloat16 when `bfloat16` (autocast).
void gemm_into(const Tensor& a, const Tensor& b, const Shape& batch, const Tensor& out,
               bool bfloat16) {
  Backend& backend = backend_for(out.device());
  if (out.numel() == 0) return;
  if (a.size(-1) == 0) return backend.fill(out, 0.0);  // K = 0: a sum of nothing
  profiler::count_flops(2.0 * static_cast<double>(out.numel()) * static_cast<double>(a.size(-1)));
  auto gemm = [&](const Tensor& x, const Tensor& y, const Tensor& z) {
    if (bfloat16) return backend.gemm_bfloat16(x, y, z, /*accumulate=*/false);
    backend.gemm(x, y, z, /*accumulate=*/false);
  };

  // A stack of matrices times one matrix, [.., M, K] · [K, N]: when a's rows lie in memory one
  // after another, the stack is one tall matrix [B*M, K] and a single large gemm does it all
  // (this is nn::Linear on a [batch, time, features] input).
  const int64_t out_dims = out.dim();
  if (b.dim() == 2 && a.dim() > 2 && dims_merge(a, 0, a.dim() - 1)) {
    gemm(merge_dims(merge_dims(a, 0, a.dim() - 1), 0, 0), merge_dims(b, 0, 0),
         merge_dims(merge_dims(out, 0, out_dims - 1), 0, 0));  // [1, B*M, ..]
    return;
  }
  gemm(as_batch_of_matrices(a, batch), as_batch_of_matrices(b, batch),
       merge_dims(out, 0, static_cast<int64_t>(batch.size())));  // [B, M, N]
}

// A result (or its gradient) with the dims that vector operands lost put back: [.., M, N] again.
// A dot product's [] becomes [1, 1].
Tensor as_matrix_result(Tensor y, int64_t a_dim, int64_t b_dim) {
  if (b_dim == 1) y = merge_dims(y, y.dim(), y.dim());          // [.., M] -> [.., M, 1]
  if (a_dim == 1) y = merge_dims(y, y.dim() - 1, y.dim() - 1);  // [.., N] -> [.., 1, N]
  return y;
}

// The three views above as recorded ops, for a backward with create_graph.
Tensor recorded_left_matrix(const Tensor& a) { return a.dim() == 1 ? a.unsqueeze(0) : a; }
Tensor recorded_right_matrix(const Tensor& b) { return b.dim() == 1 ? b.unsqueeze(1) : b; }
Tensor recorded_matrix_result(Tensor y, int64_t a_dim, int64_t b_dim) {
  if (b_dim == 1) y = y.unsqueeze(y.dim());      // [.., M] -> [.., M, 1]
  if (a_dim == 1) y = y.unsqueeze(y.dim() - 1);  // [.., N] -> [.., 1, N]
  return y;
}

}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b, CallSite site) {
  const CallSiteScope call_site(site);
  SG_PROFILE_OP("matmul");
  check_operands(a, b);
  const Tensor a_matrix = as_left_matrix(a);   // [.., M, K]
  const Tensor b_matrix = as_right_matrix(b);  // [.., K, N]
  const Shape batch = broadcast_batch(a_matrix, b_matrix);
  Shape out_shape = batch;
  if (a.dim() > 1) out_shape.push_back(a_matrix.size(-2));  // M, unless a is a vector
  if (b.dim() > 1) out_shape.push_back(b_matrix.size(-1));  // N, unless b is a vector
  Tensor out = empty(out_shape, a.options());
  const double work = static_cast<double>(a_matrix.size(-2)) *
                      static_cast<double>(a_matrix.size(-1)) *
                      static_cast<double>(b_matrix.size(-1));  // M·N·K of one product
  const bool bfloat16 = autocast_applies(a.dtype(), a.device(), work);
  gemm_into(a_matrix, b_matrix, batch, as_matrix_result(out, a.dim(), b.dim()), bfloat16);
  if (!needs_graph({a, b})) {  // inference: save nothing, make no node (record only checks it)
    return record("matmul", out, {a, b}, [](const Tensor&) { return Grads{}; });
  }

  // C = A·B with C [.., M, N]: dA = dC·Bᵀ [.., M, K] and dB = Aᵀ·dC [.., K, N], computed by matmul
  // itself on transposed views. dA needs only B and dB only A, so each is saved only if needed.
  // Broadcast batch dims come back summed by the engine (sum_to), as for any broadcasting op.
  const bool need_da = a.requires_grad(), need_db = b.requires_grad();
  // b is a transposed view (a Linear layer's weight.t(), attention's keys): its gradient is then
  // computed transposed too, dBᵀ = dCᵀ·A, and handed back as a view, so that the transpose's own
  // backward yields a contiguous gradient instead of copying one with a stride per element.
  const bool b_transposed = b.dim() >= 2 && b.stride(-2) == 1 && b.stride(-1) != 1;
  return record(
      "matmul", out, {a, b},
      [saved_a = need_db ? SavedTensor(a) : SavedTensor(),
       saved_b = need_da ? SavedTensor(b) : SavedTensor(), a_dim = a.dim(), b_dim = b.dim(),
       need_da, need_db, b_transposed, bfloat16](const Tensor& g) -> Grads {
        // The backward products in bfloat16 too if the forward's were (autocast).
        const AutocastAsRecorded autocast(bfloat16);
        // --8<-- [start:ex04.matmul_backward]
        // create_graph: the vector-to-matrix views become recorded ones, so that the
        // gradient's graph reaches g and the saved operands through them.
        const bool graph = is_grad_enabled();
        const Tensor G = graph ? recorded_matrix_result(g, a_dim, b_dim)
                               : as_matrix_result(g, a_dim, b_dim);  // [.., M, N]
        Tensor da, db;
        if (need_da) {
          const Tensor B = graph ? recorded_right_matrix(saved_b.get())
                                 : as_right_matrix(saved_b.get());  // [.., K, N]
          da = matmul(G, B.transpose(-2, -1));                      // [.., M, K]
          if (a_dim == 1) da = da.squeeze(da.dim() - 2);            // [.., K]
        }
        if (need_db) {
          const Tensor A = graph ? recorded_left_matrix(saved_a.get())
                                 : as_left_matrix(saved_a.get());  // [.., M, K]
          if (A.dim() > 2 && b_dim <= 2) {
            // B was one matrix shared by the whole stack, so dB = Σ_batch Aᵢᵀ·dCᵢ, which
            // is one gemm over the stack read as a tall matrix: [K, B*M] · [B*M, N].
            // (reshape copies A only when its rows cannot be laid end to end, e.g. a
            // transposed stack.)
            const int64_t K = A.size(-1), N = G.size(-1);
            const Tensor rows_a = A.reshape({-1, K}), rows_g = G.reshape({-1, N});
            db = b_transposed ? matmul(rows_g.transpose(0, 1), rows_a).transpose(0, 1)
                              : matmul(rows_a.transpose(0, 1), rows_g);  // [K, N]
          } else {
            db = b_transposed ? matmul(G.transpose(-2, -1), A).transpose(-2, -1)
                              : matmul(A.transpose(-2, -1), G);  // [.., K, N]
          }
          if (b_dim == 1) db = db.squeeze(db.dim() - 1);  // [.., K]
        }
        return Grads{da, db};
        // --8<-- [end:ex04.matmul_backward]
      });
}

}  // namespace sg
