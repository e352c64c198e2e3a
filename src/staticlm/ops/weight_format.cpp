// SPDX-License-Identifier: Apache-2.0
#include "staticlm/ops/weight_format.h"

#include <charconv>

namespace staticlm {

Result<WeightFormat> WeightFormat::parse(std::string_view name) {
  for (auto [prefix, codes] : {std::pair{std::string_view("int8_g"), PanelCodes::kInt8},
                               std::pair{std::string_view("int4_g"), PanelCodes::kInt4}}) {
    if (name.starts_with(prefix)) {
      const std::string_view digits = name.substr(prefix.size());
      int64_t group = 0;
      const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), group);
      if (error != std::errc() || end != digits.data() + digits.size() || !is_quant_group(group)) {
        return invalid_argument("weight format '", name, "': expected a group size of 16, 32, 64 or 128 after '",
                                prefix, "'");
      }
      return quantized(codes, group);
    }
  }
  auto dtype = parse_dtype(name);
  if (!dtype.ok()) {
    return invalid_argument("weight format '", name, "': expected a dtype, int8_g<G> or int4_g<G>");
  }
  return of_dtype(*dtype);
}

std::string WeightFormat::name() const {
  switch (codes) {
    case PanelCodes::kInt8: return str_cat("int8_g", group);
    case PanelCodes::kInt4: return str_cat("int4_g", group);
    default: return std::string(dtype_name(dtype));
  }
}

double WeightFormat::bits_per_weight() const {
  if (!is_quantized()) {
    const DTypeInfo& info = dtype_info(dtype);
    return 8.0 * static_cast<double>(info.block_bytes) / static_cast<double>(info.block_elements);
  }
  const PanelLayout layout = PanelLayout::quantized(kPanelWidth, group, codes, group);
  return 8.0 * static_cast<double>(layout.group_units()) / static_cast<double>(kPanelWidth * group);
}

}  // namespace staticlm
