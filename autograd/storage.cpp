#include "autograd/storage.h"

#include "autograd/backend/backend.h"

namespace sg {

Storage::Storage(size_t nbytes, Device device) : nbytes_(nbytes), device_(device) {
  backend_ = &backend_for(device);
  data_ = backend_->allocate(nbytes);
}

Storage::~Storage() {
  if (data_ != nullptr) backend_->deallocate(data_, nbytes_);
}

}  // namespace sg
