// SPDX-License-Identifier: Apache-2.0
// Conversion between the plain float dtypes (f32, f16, bf16; round to nearest even), shared by
// the exporter (checkpoint tensors converted while the program is written) and backends that
// store their weights in a dtype of their own.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "staticlm/core/byte_source.h"
#include "staticlm/core/dtype.h"

namespace staticlm {

// F32, F16 or BF16.
bool is_plain_float(DType dtype);

// Writes `elements` values of `in` (dtype `from`) to `out` as `to`; a same-dtype call copies.
// Both dtypes must be plain floats and both spans large enough (the callers check).
void convert_floats(std::span<const uint8_t> in, DType from, std::span<uint8_t> out, DType to, uint64_t elements);

// A source yielding `source`'s values (`from`) converted to `to`, reading and converting on each
// read(). `name` names the tensor in errors. Fails with InvalidArgument when either dtype is not
// a plain float or the source is not a whole number of `from` values, OutOfRange on overflow.
Result<std::shared_ptr<ByteSource>> converted_float_source(std::shared_ptr<ByteSource> source, DType from, DType to,
                                                           std::string name);

}  // namespace staticlm
