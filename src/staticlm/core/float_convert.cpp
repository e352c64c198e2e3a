// SPDX-License-Identifier: Apache-2.0
#include "staticlm/core/float_convert.h"

#include <bit>
#include <cstring>
#include <utility>
#include <vector>

#include "staticlm/core/checked_math.h"
#include "staticlm/core/half.h"

namespace staticlm {
namespace {

// Checkpoint and program data are little-endian; this reads and writes them in host order.
static_assert(std::endian::native == std::endian::little, "float conversion assumes a little-endian host");

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

class ConvertedFloatSource final : public ByteSource {
 public:
  ConvertedFloatSource(std::shared_ptr<ByteSource> source, DType from, DType to, uint64_t elements, uint64_t size_bytes,
                       std::string name)
      : source_(std::move(source)),
        from_(from),
        to_(to),
        elements_(elements),
        size_bytes_(size_bytes),
        name_(std::move(name)) {}

  uint64_t size_bytes() const override { return size_bytes_; }

  Status read(std::span<uint8_t> out) const override {
    if (out.size() != size_bytes_) {
      return internal_error("converted source of tensor '", name_, "' holds ", size_bytes_, " bytes, asked for ",
                            out.size());
    }
    // One tensor at a time: the program writer reads constants one after another.
    std::vector<uint8_t> in(source_->size_bytes());
    STATICLM_RETURN_IF_ERROR(source_->read(in));
    convert_floats(in, from_, out, to_, elements_);
    return ok_status();
  }

 private:
  std::shared_ptr<ByteSource> source_;
  DType from_;
  DType to_;
  uint64_t elements_;
  uint64_t size_bytes_;
  std::string name_;
};

}  // namespace

bool is_plain_float(DType dtype) {
  return dtype == DType::kF32 || dtype == DType::kF16 || dtype == DType::kBF16;
}

void convert_floats(std::span<const uint8_t> in, DType from, std::span<uint8_t> out, DType to, uint64_t elements) {
  if (from == to) {
    if (elements != 0) {
      std::memcpy(out.data(), in.data(), elements * dtype_info(from).block_bytes);
    }
    return;
  }
  switch (from) {
    case DType::kF32: convert_from<DType::kF32>(to, in, out, elements); break;
    case DType::kF16: convert_from<DType::kF16>(to, in, out, elements); break;
    default: convert_from<DType::kBF16>(to, in, out, elements); break;
  }
}

Result<std::shared_ptr<ByteSource>> converted_float_source(std::shared_ptr<ByteSource> source, DType from, DType to,
                                                           std::string name) {
  if (!is_plain_float(from) || !is_plain_float(to)) {
    return invalid_argument("tensor '", name, "': cannot convert ", dtype_name(from), " to ", dtype_name(to),
                            " (supported: f32, f16, bf16)");
  }
  const uint64_t from_bytes = dtype_info(from).block_bytes;
  if (source->size_bytes() % from_bytes != 0) {
    return invalid_argument("tensor '", name, "': ", source->size_bytes(), " bytes is not a whole number of ",
                            dtype_name(from), " values");
  }
  const uint64_t elements = source->size_bytes() / from_bytes;
  const auto size_bytes = checked_mul(elements, dtype_info(to).block_bytes);
  if (!size_bytes) {
    return out_of_range("tensor '", name, "': ", elements, " elements of ", dtype_name(to),
                        " overflow a 64-bit byte size");
  }
  return std::shared_ptr<ByteSource>(
      std::make_shared<ConvertedFloatSource>(std::move(source), from, to, elements, *size_bytes, std::move(name)));
}

}  // namespace staticlm
