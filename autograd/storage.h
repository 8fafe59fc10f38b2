// Storage: one buffer of bytes on one device, shared by a tensor and all its views. It also holds
// the version counter: every in-place write bumps it, so backward can tell when a tensor it saved
// was changed (see Note [Version counter] in autograd/node.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "autograd/device.h"

namespace sg {

class Backend;

class Storage {
 public:
  // Allocates `nbytes` on `device` through that device's backend. Contents are uninitialised.
  Storage(size_t nbytes, Device device);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const { return data_; }
  size_t nbytes() const { return nbytes_; }
  Device device() const { return device_; }

  int64_t version() const { return version_; }
  void bump_version() { ++version_; }

 private:
  Backend* backend_ = nullptr;  // the backend that allocated data_, which frees it
  void* data_ = nullptr;
  size_t nbytes_ = 0;
  Device device_;
  int64_t version_ = 0;
};

}  // namespace sg
