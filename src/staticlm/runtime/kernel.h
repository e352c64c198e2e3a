// The runtime side of an op implementation. A KernelFactory is called once per kernel-call
// instruction when a method is loaded: it sees the instance's validated signature (input and
// output specs, attributes) and returns a prepared Kernel, or an error saying why this backend
// cannot run that instance (unsupported dtype, say). Kernel::execute then runs with tensor
// views whose data pointers are bound for that call; shapes and dtypes are the signature's.
#pragma once

#include <functional>
#include <memory>
#include <span>

#include "staticlm/core/result.h"
#include "staticlm/core/tensor.h"
#include "staticlm/core/thread_pool.h"
#include "staticlm/ops/attributes.h"
#include "staticlm/ops/op_set.h"

namespace staticlm {

struct KernelSignature {
  OpKind op;
  InputSpecs inputs;  // nullptr for an absent optional input
  std::span<const TensorSpec> outputs;
  const Attributes& attributes;
};

struct KernelContext {
  ThreadPool* thread_pool = nullptr;  // never null during execute
};

class Kernel {
 public:
  virtual ~Kernel() = default;
  // `inputs` has one view per signature input (an absent optional input has a null data
  // pointer). An output may share storage with an input only where the op updates in place
  // (in_place_input). Fails with OutOfRange on a bad runtime value (a token id or a position
  // outside its table), never reading or writing out of bounds.
  virtual Status execute(std::span<const TensorView> inputs, std::span<const TensorView> outputs,
                         const KernelContext& context) = 0;
};

using KernelFactory = std::function<Result<std::unique_ptr<Kernel>>(const KernelSignature& signature)>;

}  // namespace staticlm
