// converted_source (declared in safetensors.h): dtype conversion while the program writer reads.
#include <bit>
#include <cstring>
#include <string>
#include <utility>

#include "staticlm/core/checked_math.h"
#include "staticlm/core/half.h"
#include "staticlm/core/mapped_file.h"
#include "staticlm/exporter/safetensors.h"

namespace staticlm {
namespace {

// Checkpoint and program data are little-endian; this reads and writes them in host order.
static_assert(std::endian::native == std::endian::little, "converted_source assumes a little-endian host");

bool is_convertible(DType dtype) {
  return dtype == DType::kF32 || dtype == DType::kF16 || dtype == DType::kBF16;
}

template <DType kFrom>
float load_element(const uint8_t* source) {
  if constexpr (kFrom == DType::kF32) {
    float value = 0;
    std::memcpy(&value, source, sizeof(value));
    return value;
  } else {
    uint16_t bits = 0;
    std::memcpy(&bits, source, sizeof(bits));
    return kFrom == DType::kF16 ? f16_to_f32(bits) : bf16_to_f32(bits);
  }
}

template <DType kTo>
void store_element(float value, uint8_t* target) {
  if constexpr (kTo == DType::kF32) {
    std::memcpy(target, &value, sizeof(value));
  } else {
    const uint16_t bits = kTo == DType::kF16 ? f32_to_f16(value) : f32_to_bf16(value);
    std::memcpy(target, &bits, sizeof(bits));
  }
}

template <DType kFrom, DType kTo>
void convert_all(std::span<const uint8_t> in, std::span<uint8_t> out, uint64_t elements) {
  constexpr size_t kInSize = kFrom == DType::kF32 ? 4 : 2;
  constexpr size_t kOutSize = kTo == DType::kF32 ? 4 : 2;
  for (uint64_t i = 0; i < elements; ++i) {
    store_element<kTo>(load_element<kFrom>(in.data() + i * kInSize), out.data() + i * kOutSize);
  }
}

template <DType kFrom>
void convert_from(DType to, std::span<const uint8_t> in, std::span<uint8_t> out, uint64_t elements) {
  switch (to) {
    case DType::kF32: convert_all<kFrom, DType::kF32>(in, out, elements); break;
    case DType::kF16: convert_all<kFrom, DType::kF16>(in, out, elements); break;
    default: convert_all<kFrom, DType::kBF16>(in, out, elements); break;
  }
}

class ConvertedSource final : public ByteSource {
 public:
  ConvertedSource(std::string name, std::span<const uint8_t> bytes, DType from, DType to, uint64_t elements,
                  uint64_t size_bytes)
      : name_(std::move(name)), bytes_(bytes), from_(from), to_(to), elements_(elements), size_bytes_(size_bytes) {}

  uint64_t size_bytes() const override { return size_bytes_; }

  Status read(std::span<uint8_t> out) const override {
    if (out.size() != size_bytes_) {
      return internal_error("converted source of tensor '", name_, "' holds ", size_bytes_, " bytes, asked for ",
                            out.size());
    }
    if (from_ == to_) {
      if (!bytes_.empty()) {
        std::memcpy(out.data(), bytes_.data(), bytes_.size());
      }
    } else {
      switch (from_) {
        case DType::kF32: convert_from<DType::kF32>(to_, bytes_, out, elements_); break;
        case DType::kF16: convert_from<DType::kF16>(to_, bytes_, out, elements_); break;
        default: convert_from<DType::kBF16>(to_, bytes_, out, elements_); break;
      }
    }
    // Each tensor is read once while writing a program: drop its pages so export's resident set
    // stays near one tensor instead of growing to the whole checkpoint.
    release_mapped_pages(bytes_);
    return ok_status();
  }

 private:
  std::string name_;
  std::span<const uint8_t> bytes_;
  DType from_;
  DType to_;
  uint64_t elements_;
  uint64_t size_bytes_;
};

}  // namespace

Result<std::shared_ptr<ByteSource>> converted_source(const SafetensorsTensor& tensor, DType target) {
  if (!is_convertible(tensor.dtype) || !is_convertible(target)) {
    return invalid_argument("tensor '", tensor.name, "' in '", tensor.file, "': cannot convert ",
                            dtype_name(tensor.dtype), " to ", dtype_name(target), " (supported: f32, f16, bf16)");
  }
  const uint64_t source_element_bytes = dtype_info(tensor.dtype).block_bytes;
  if (tensor.bytes.size() % source_element_bytes != 0) {
    return invalid_argument("tensor '", tensor.name, "' in '", tensor.file, "': ", tensor.bytes.size(),
                            " bytes is not a whole number of ", dtype_name(tensor.dtype), " values");
  }
  const uint64_t elements = tensor.bytes.size() / source_element_bytes;
  const auto size_bytes = checked_mul(elements, dtype_info(target).block_bytes);
  if (!size_bytes) {
    return out_of_range("tensor '", tensor.name, "' in '", tensor.file, "': ", elements, " elements of ",
                        dtype_name(target), " overflow a 64-bit byte size");
  }
  return std::shared_ptr<ByteSource>(
      std::make_shared<ConvertedSource>(tensor.name, tensor.bytes, tensor.dtype, target, elements, *size_bytes));
}

}  // namespace staticlm
