// Where a tensor's memory lives: the CPU, or a CUDA device with an index.
//   sg::Device::cpu(), sg::Device::cuda(0); sg::cuda_available() says whether a GPU can be used.
#pragma once

#include <ostream>
#include <string>

#include <fmt/format.h>

namespace sg {

enum class DeviceType : uint8_t { CPU, CUDA };

struct Device {
  DeviceType type = DeviceType::CPU;
  int index = 0;

  static constexpr Device cpu() { return Device{DeviceType::CPU, 0}; }
  static constexpr Device cuda(int index = 0) { return Device{DeviceType::CUDA, index}; }

  bool is_cpu() const { return type == DeviceType::CPU; }
  bool is_cuda() const { return type == DeviceType::CUDA; }
  std::string str() const { return is_cpu() ? "cpu" : fmt::format("cuda:{}", index); }

  friend bool operator==(const Device&, const Device&) = default;
};

inline constexpr Device kCPU = Device::cpu();

inline std::ostream& operator<<(std::ostream& os, const Device& d) { return os << d.str(); }

// True when scratchgrad was built with CUDA and a GPU answers; never throws.
bool cuda_available();
// Why CUDA cannot be used here ("built without CUDA", or the driver's error); empty when it can.
std::string cuda_unavailable_reason();

}  // namespace sg

template <>
struct fmt::formatter<sg::Device> : fmt::formatter<std::string> {
  auto format(const sg::Device& d, fmt::format_context& ctx) const {
    return fmt::formatter<std::string>::format(d.str(), ctx);
  }
};
