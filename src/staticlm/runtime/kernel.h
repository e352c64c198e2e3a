// SPDX-License-Identifier: Apache-2.0
// The runtime side of an op implementation. A KernelFactory is called once per kernel-call
// instruction when a program is loaded: it sees the instance's validated signature (input and
// output specs, attributes) and returns a prepared Kernel, or Unimplemented saying why it does
// not run that instance (an unsupported dtype, say: the registry then tries the next kernel of
// the op). Kernel::execute then runs with tensor views whose data pointers are bound for that
// call; shapes and dtypes are the signature's.
//
// A prepared kernel belongs to the program and is shared by every session: execute is const and
// must keep no state between calls (scratch lives on the stack or in the call), so sessions run
// it concurrently.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>

#include "staticlm/core/result.h"
#include "staticlm/core/tensor.h"
#include "staticlm/core/thread_pool.h"
#include "staticlm/ops/attributes.h"
#include "staticlm/ops/op_set.h"
#include "staticlm/runtime/op_profile.h"

namespace staticlm {

struct KernelSignature {
  OpKind op;
  InputSpecs inputs;  // nullptr for an absent optional input
  std::span<const TensorSpec> outputs;
  const Attributes& attributes;
};

// How much of a method output, or a delegate call's, a caller reads this call: none of it, the
// chunk's last row only (a prefill whose caller samples from its last token), or all of it.
enum class RowNeed : uint8_t { kNone, kLastRow, kAll };

struct KernelContext {
  ThreadPool* thread_pool = nullptr;  // never null during execute
  // The chunk being run has `chunk_rows` rows, the first `padding_rows` of them padding (position
  // -1, a left-padded partial prefill chunk): a kernel whose rows are the chunk's (a linear over
  // [chunk_rows, K]) may leave those rows of its outputs unwritten, since padding rows affect no
  // other row and their results are unspecified (docs/ops.md). 0 / 0 when unknown.
  int64_t chunk_rows = 0;
  int64_t padding_rows = 0;
  // Where set, the session times each kernel call into it (staticlm bench --ops).
  OpProfile* op_profile = nullptr;
  // A delegate call's outputs, in its internal order: what the caller reads of each this call
  // (MethodSession::execute(needs)); the delegate may leave the rest unwritten. Empty: all of
  // every output. Kernels ignore it.
  std::span<const RowNeed> output_needs = {};
};

class Kernel {
 public:
  virtual ~Kernel() = default;
  // `inputs` has one view per signature input (an absent optional input has a null data
  // pointer). An output may share storage with an input only where the op updates in place
  // (in_place_updates). Fails with OutOfRange on a bad runtime value (a token id or a position
  // outside its table), never reading or writing out of bounds.
  virtual Status execute(std::span<const TensorView> inputs, std::span<const TensorView> outputs,
                         const KernelContext& context) const = 0;
};

using KernelFactory = std::function<Result<std::unique_ptr<Kernel>>(const KernelSignature& signature)>;

}  // namespace staticlm
