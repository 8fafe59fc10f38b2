#include "distributed/collective_check.h"

#include <algorithm>
#include <array>
#include <string_view>
#include <vector>

#include "autograd/error.h"
#include "distributed/mpi_wait.h"

namespace sg::distributed {

namespace {

constexpr size_t kMaxDims = 6;  // larger ranks are compared by numel and a hash of their dims

// Fifteen int64 (120 bytes), all-gathered as MPI_INT64_T.
struct Signature {
  int64_t op = 0, detail = 0, dtype = 0, device_type = 0, root = 0, ndim = 0, numel = 0;
  int64_t usable = 1;  // 0: this rank's tensor was refused (its own error says why)
  int64_t dims_hash = 0;
  std::array<int64_t, kMaxDims> dims{};

  bool operator==(const Signature&) const = default;
};
static_assert(sizeof(Signature) == 15 * sizeof(int64_t));

// FNV-1a: the same number for the same name in every process (std::hash promises no such thing).
int64_t name_code(std::string_view name) {
  uint64_t h = 14695981039346656037ull;
  for (char c : name) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  return static_cast<int64_t>(h >> 1);
}

Signature signature_of(const std::string& op, const Tensor& tensor, int root, int detail,
                       bool usable) {
  Signature s;
  s.op = name_code(op);
  s.detail = detail;
  s.root = root;
  s.usable = usable;
  if (!tensor.defined()) return s;
  s.dtype = static_cast<int64_t>(tensor.dtype());
  s.device_type = static_cast<int64_t>(tensor.device().type);
  s.ndim = tensor.dim();
  s.numel = tensor.numel();
  for (int64_t d = 0; d < tensor.dim(); ++d) {
    s.dims_hash = s.dims_hash * 1000003 + tensor.size(d);
    if (static_cast<size_t>(d) < kMaxDims) s.dims[static_cast<size_t>(d)] = tensor.size(d);
  }
  return s;
}

}  // namespace

std::string describe(const Tensor& tensor) {
  return fmt::format("{} {} on {}", tensor.dtype(), tensor.shape(), tensor.device().str());
}

void check_same_on_all_ranks(MPI_Comm comm, const std::string& op, const Tensor& tensor, int root,
                             int detail, const std::string& refused,
                             std::chrono::milliseconds timeout,
                             const std::function<void()>& meanwhile) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  if (size == 1) {
    if (!refused.empty()) throw Error(refused);
    return;
  }
  const Signature mine = signature_of(op, tensor, root, detail, refused.empty());
  std::vector<Signature> all(static_cast<size_t>(size));
  constexpr int kWords = sizeof(Signature) / sizeof(int64_t);
  MPI_Request request = MPI_REQUEST_NULL;
  const int code =
      MPI_Iallgather(&mine, kWords, MPI_INT64_T, all.data(), kWords, MPI_INT64_T, comm, &request);
  SG_CHECK(code == MPI_SUCCESS, "{}: rank {}: MPI failed: {}", op, rank, mpi_error_string(code));
  wait_for(request,
           fmt::format("{} on rank {} with {}", op, rank,
                       tensor.defined() ? describe(tensor) : "an undefined tensor"),
           timeout, meanwhile);
  // A refused tensor on any rank fails every rank: the others must not wait for it.
  if (!refused.empty()) throw Error(refused);
  for (int r = 0; r < size; ++r) {
    SG_CHECK(all[static_cast<size_t>(r)].usable,
             "{}: rank {}'s tensor was refused (its own error "
             "says why), so rank {} stops too",
             op, r, rank);
  }
  if (std::all_of(all.begin(), all.end(), [&](const Signature& s) { return s == all[0]; })) return;

  // Each rank knows only its own tensor by name; the others are spelled out from their signature.
  std::string ranks;
  for (int r = 0; r < size; ++r) {
    const Signature& s = all[static_cast<size_t>(r)];
    std::string shape = "[";
    for (int64_t d = 0; d < std::min<int64_t>(s.ndim, kMaxDims); ++d)
      shape += (d ? ", " : "") + std::to_string(s.dims[static_cast<size_t>(d)]);
    shape += s.ndim > static_cast<int64_t>(kMaxDims) ? ", ...]" : "]";
    ranks +=
        fmt::format("{}rank {} has {} {} on {}{}{}", r ? ", " : "", r, static_cast<DType>(s.dtype),
                    shape, s.device_type == static_cast<int64_t>(DeviceType::CPU) ? "cpu" : "cuda",
                    s.root >= 0 ? fmt::format(" (root {})", s.root) : "",
                    s.op != mine.op ? " in a different collective" : "");
  }
  SG_FAIL(
      "{}: ranks disagree (seen from rank {}): {}; every rank must call the same collectives in "
      "the same order with tensors of the same dtype, shape and device type",
      op, rank, ranks);
}

}  // namespace sg::distributed
