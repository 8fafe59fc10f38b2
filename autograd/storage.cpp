#include "autograd/storage.h"

#include "autograd/backend/backend.h"

namespace sg {

Storage::Storage(size_t nbytes, Device device) : nbytes_(nbytes), device_(device) {
  data_ = backend_for(device).allocate(nbytes);
}

Storage::~Storage() {
  if (data_ != nullptr) backend_for(device_).deallocate(data_, nbytes_);
}

}  // namespace sg
