// SPDX-License-Identifier: Apache-2.0
// converted_source (declared in safetensors.h): dtype conversion while the program writer reads.
#include <cstring>
#include <string>
#include <utility>

#include "staticlm/core/checked_math.h"
#include "staticlm/core/float_convert.h"
#include "staticlm/core/mapped_file.h"
#include "staticlm/exporter/safetensors.h"

namespace staticlm {
namespace {

class ConvertedSource final : public ByteSource {
 public:
  ConvertedSource(std::string name, std::span<const uint8_t> bytes, DType from, DType to, uint64_t elements,
                  uint64_t size_bytes, float offset = 0.0f, float factor = 1.0f)
      : name_(std::move(name)),
        bytes_(bytes),
        from_(from),
        to_(to),
        elements_(elements),
        size_bytes_(size_bytes),
        offset_(offset),
        factor_(factor) {}

  uint64_t size_bytes() const override { return size_bytes_; }

  Status read(std::span<uint8_t> out) const override {
    if (out.size() != size_bytes_) {
      return internal_error("converted source of tensor '", name_, "' holds ", size_bytes_, " bytes, asked for ",
                            out.size());
    }
    convert_floats(bytes_, from_, out, to_, elements_);
    if (offset_ != 0.0f || factor_ != 1.0f) {
      // Only shifted_f32_source and scaled_f32_source set these, so `out` holds f32 values.
      for (uint64_t i = 0; i < elements_; ++i) {
        float value = 0.0f;
        std::memcpy(&value, out.data() + i * sizeof(float), sizeof(float));
        value = value * factor_ + offset_;
        std::memcpy(out.data() + i * sizeof(float), &value, sizeof(float));
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
  float offset_;
  float factor_;
};

// The element count and the byte size in `target` of a tensor converted_source can read.
struct Conversion {
  uint64_t elements = 0;
  uint64_t size_bytes = 0;
};

Result<Conversion> plan_conversion(const SafetensorsTensor& tensor, DType target) {
  if (!is_plain_float(tensor.dtype) || !is_plain_float(target)) {
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
  return Conversion{elements, *size_bytes};
}

}  // namespace

Result<std::shared_ptr<ByteSource>> converted_source(const SafetensorsTensor& tensor, DType target) {
  STATICLM_ASSIGN_OR_RETURN(Conversion conversion, plan_conversion(tensor, target));
  return std::shared_ptr<ByteSource>(std::make_shared<ConvertedSource>(tensor.name, tensor.bytes, tensor.dtype, target,
                                                                       conversion.elements, conversion.size_bytes));
}

Result<std::shared_ptr<ByteSource>> shifted_f32_source(const SafetensorsTensor& tensor, float offset) {
  STATICLM_ASSIGN_OR_RETURN(Conversion conversion, plan_conversion(tensor, DType::kF32));
  return std::shared_ptr<ByteSource>(std::make_shared<ConvertedSource>(
      tensor.name, tensor.bytes, tensor.dtype, DType::kF32, conversion.elements, conversion.size_bytes, offset));
}

Result<std::shared_ptr<ByteSource>> scaled_f32_source(const SafetensorsTensor& tensor, float factor) {
  STATICLM_ASSIGN_OR_RETURN(Conversion conversion, plan_conversion(tensor, DType::kF32));
  return std::shared_ptr<ByteSource>(std::make_shared<ConvertedSource>(
      tensor.name, tensor.bytes, tensor.dtype, DType::kF32, conversion.elements, conversion.size_bytes, 0.0f, factor));
}

}  // namespace staticlm
