#include "distributed/data_parallel.h"

#include "autograd/error.h"
#include "autograd/factory.h"
#include "autograd/grad_mode.h"
#include "distributed/collective_check.h"

namespace sg::nn {

struct DistributedDataParallel::Bucket {
  Tensor flat;                 // the bucket's gradients, back to back: what is all-reduced
  std::vector<size_t> params;  // indices into params_
  size_t ready = 0;            // parameters whose gradient is in `flat` this step
  std::unique_ptr<distributed::Work> work;  // the all-reduce in flight
};

DistributedDataParallel::DistributedDataParallel(std::shared_ptr<Module> module,
                                                 std::shared_ptr<distributed::ProcessGroup> group,
                                                 DistributedDataParallelOptions options)
    : module_(std::move(module)), group_(std::move(group)) {
  SG_CHECK(module_ != nullptr && group_ != nullptr,
           "DistributedDataParallel: the module and the process group must be given");
  SG_CHECK(options.bucket_cap_bytes > 0,
           "DistributedDataParallel: bucket_cap_bytes must be > 0, got {}",
           options.bucket_cap_bytes);
  for (const Tensor& p : module_->parameters()) {
    if (p.requires_grad()) params_.push_back(p);
  }
  SG_CHECK(!params_.empty(),
           "DistributedDataParallel: the module has no parameter that requires grad");

  if (options.broadcast_from_rank0) {
    // One broadcast per tensor, each checked: a rank whose model differs in shape stops here with
    // an error naming the parameter's shape on every rank.
    NoGradGuard no_grad;
    for (const Tensor& p : params_) group_->broadcast(p, 0);
    for (const auto& [name, buffer] : module_->named_buffers()) {
      if (buffer.is_floating_point() && buffer.is_contiguous()) group_->broadcast(buffer, 0);
    }
  }

  // Reverse registration order approximates the order backward finishes the gradients; a bucket
  // holds one dtype on one device, up to the cap.
  slot_.resize(params_.size());
  std::vector<int64_t> numels;  // each bucket's size, allocated once all are known
  int64_t bucket_bytes = 0;
  for (size_t k = params_.size(); k-- > 0;) {
    const Tensor& p = params_[k];
    const int64_t bytes = p.numel() * static_cast<int64_t>(dtype_size(p.dtype()));
    const Tensor* first = buckets_.empty() ? nullptr : &params_[buckets_.back()->params.front()];
    const bool fits = first != nullptr && bucket_bytes + bytes <= options.bucket_cap_bytes &&
                      first->dtype() == p.dtype() && first->device() == p.device();
    if (!fits) {
      buckets_.push_back(std::make_unique<Bucket>());
      numels.push_back(0);
      bucket_bytes = 0;
    }
    slot_[k] = {buckets_.size() - 1, numels.back()};
    buckets_.back()->params.push_back(k);
    numels.back() += p.numel();
    bucket_bytes += bytes;
  }
  for (size_t i = 0; i < buckets_.size(); ++i) {
    buckets_[i]->flat = zeros({numels[i]}, params_[buckets_[i]->params.front()].options());
  }

  filled_.assign(params_.size(), false);
  for (size_t k = 0; k < params_.size(); ++k) {
    hooks_.push_back(register_post_accumulate_grad_hook(
        params_[k], [this, k](const Tensor&) { on_gradient_ready(k); }));
  }
}

DistributedDataParallel::~DistributedDataParallel() {
  hooks_.clear();
  // An all-reduce still in flight writes into its bucket: let it finish first (Work's destructor
  // waits).
  for (auto& b : buckets_) b->work.reset();
}

int64_t DistributedDataParallel::gradient_bytes() const {
  int64_t total = 0;
  for (const auto& b : buckets_)
    total += b->flat.numel() * static_cast<int64_t>(dtype_size(b->flat.dtype()));
  return total;
}

void DistributedDataParallel::on_gradient_ready(size_t k) {
  if (!sync_enabled_) return;  // no_sync(): the gradient stays in .grad(), where it accumulates
  if (synced_) {  // the first gradient of a new step (finish_gradient_sync() was not needed)
    synced_ = false;
  }
  const auto [bucket_index, offset] = slot_[k];
  Bucket& b = *buckets_[bucket_index];
  SG_CHECK(!b.work,
           "DistributedDataParallel: rank {}: the gradient of a parameter ({}) arrived while its "
           "bucket was already being all-reduced; call finish_gradient_sync() between backward "
           "passes that use different parameters",
           group_->rank(), distributed::describe(params_[k]));
  // Buckets already on their way move on while backward computes this gradient's successors.
  for (size_t i = 0; i < next_to_start_; ++i) buckets_[i]->work->progress();
  NoGradGuard no_grad;
  Tensor slot = b.flat.narrow(0, offset, params_[k].numel());
  slot.copy_(params_[k].grad().reshape({-1}));
  if (!filled_[k]) {
    filled_[k] = true;
    if (++b.ready == b.params.size()) start_ready_buckets();
  }
}

void DistributedDataParallel::start_ready_buckets() {
  while (next_to_start_ < buckets_.size() &&
         buckets_[next_to_start_]->ready == buckets_[next_to_start_]->params.size()) {
    Bucket& b = *buckets_[next_to_start_++];
    b.work = group_->all_reduce_async(b.flat, distributed::ReduceOp::Average);
  }
  // The last bucket has started: backward has (almost) nothing left, so finish here and hand
  // back averaged gradients from backward() itself, as PyTorch does.
  if (next_to_start_ == buckets_.size()) wait_and_write_back();
}

void DistributedDataParallel::wait_and_write_back() {
  NoGradGuard no_grad;
  for (auto& b : buckets_) {
    b->work->wait();
    b->work.reset();
    for (size_t k : b->params) {
      // A copy, not a view into the bucket: the next step overwrites the bucket while the
      // optimizer (or the caller) may still hold this step's gradient.
      params_[k].set_grad(b->flat.narrow(0, slot_[k].second, params_[k].numel())
                              .reshape(params_[k].shape())
                              .clone());
      filled_[k] = false;
    }
    b->ready = 0;
  }
  next_to_start_ = 0;
  synced_ = true;
}

void DistributedDataParallel::finish_gradient_sync() {
  if (!sync_enabled_) return;
  if (synced_) {  // backward's last hook did it all
    synced_ = false;
    return;
  }
  // Some parameters got no gradient from the last backward (or there was no backward at all):
  // every rank must still send every bucket, in order. Their slots hold what .grad() holds (a sum
  // accumulated under no_sync), or zeros.
  NoGradGuard no_grad;
  for (size_t k = 0; k < params_.size(); ++k) {
    if (filled_[k]) continue;
    const auto [bucket_index, offset] = slot_[k];
    Bucket& b = *buckets_[bucket_index];
    Tensor slot = b.flat.narrow(0, offset, params_[k].numel());
    if (params_[k].grad().defined()) {
      slot.copy_(params_[k].grad().reshape({-1}));
    } else {
      slot.zero_();
    }
    filled_[k] = true;
    ++b.ready;
  }
  start_ready_buckets();  // ends in wait_and_write_back()
  synced_ = false;
}

Tensor DistributedDataParallel::global_mean_loss(const Tensor& local_sum, int64_t local_count) {
  SG_CHECK(local_count >= 0, "DistributedDataParallel::global_mean_loss: rank {}: the count is {}",
           group_->rank(), local_count);
  Tensor total = scalar_tensor(static_cast<double>(local_count), kInt64);
  group_->all_reduce(total, distributed::ReduceOp::Sum);
  const int64_t all = total.item<int64_t>();
  SG_CHECK(all > 0,
           "DistributedDataParallel::global_mean_loss: the {} ranks hold no token at all; a mean "
           "over nothing is undefined",
           group_->world_size());
  return local_sum * (static_cast<double>(group_->world_size()) / static_cast<double>(all));
}

}  // namespace sg::nn
