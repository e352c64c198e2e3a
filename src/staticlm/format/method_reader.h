// SPDX-License-Identifier: Apache-2.0
// Reads a verified flatbuffer Method back into the plain MethodSpec the writer serializes, so
// the runtime verifies and prepares one in-memory form whichever file a method came from (a
// program or a method blob).
#pragma once

#include "staticlm/core/result.h"
#include "staticlm/format/program_generated.h"
#include "staticlm/format/program_spec.h"

namespace staticlm {

// Fails with InvalidArgument for an attribute of unknown type or a repeated attribute name
// (neither passes the file verifier).
Result<MethodSpec> read_method_spec(const fb::Method& method);

}  // namespace staticlm
