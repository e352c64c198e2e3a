// SPDX-License-Identifier: Apache-2.0
// PreparedMethod: the one verifier and executor of instruction lists. A program's methods and
// every delegate that runs a subgraph as an instruction list (the cpu backend's) go through it:
// prepare() verifies the list as untrusted and chooses a kernel (or inits a delegate) for every
// instruction, once; each session then gets its own MethodSession (arena, bound buffers,
// delegate instances) over the same immutable PreparedMethod.
//
// What prepare() checks, beyond what the file verifier already did (docs/format.md):
// - values: a known dtype and valid shape; arena values aligned to the arena alignment (a power
//   of two in [16, 4096]) — the arena allocated is what the values reach, never a size the file
//   declares; constants and named data resolved, each exactly dtype x shape bytes;
// - inputs and outputs: names unique, each an input / output value at its own position;
// - kernel calls: a known op whose instance type-checks (infer_outputs) with exactly the declared
//   output specs, an in-place update whose output is its input, no other output that is also an
//   input, and a kernel that takes it (KernelRegistry::select);
// - delegate calls: the delegate inits, produces as many outputs as the call binds, each of the
//   dtype and size of the value it is bound to through the output order;
// - nothing is read before it is written (or is an input / constant), only arena, output and
//   mutable input values are written (an input only by an in-place update), every output is
//   written.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "staticlm/core/cpu_features.h"
#include "staticlm/core/result.h"
#include "staticlm/format/program_spec.h"
#include "staticlm/runtime/backend_runtime.h"
#include "staticlm/runtime/kernel_registry.h"
#include "staticlm/runtime/named_data.h"

namespace staticlm {

class MethodSession;

struct IoTensorInfo {
  std::string name;
  DType dtype = DType::kF32;
  Shape shape;
  uint64_t nbytes = 0;
  bool is_mutable = false;  // inputs only: the program writes into it in place
};

// A delegate call's prepared delegate, as the context inits it.
struct PreparedDelegate {
  std::unique_ptr<DelegateHandle> handle;
  std::string description;             // "delegate 0, backend 'cpu'"
  std::vector<uint32_t> output_order;  // internal output i -> call output output_order[i]; empty: identity
};

// What a method may use from outside its instruction list.
struct PrepareContext {
  std::string label;                        // message prefix: "method 'prefill'"
  const KernelRegistry* kernels = nullptr;  // required when the list has kernel calls
  CpuFeatures allowed_features = CpuFeatures::host();
  // Bytes of constant `index` (Constant storage); empty: the method may have no constants.
  std::function<Result<std::span<const uint8_t>>(uint64_t index)> constant;
  const NamedDataMap* named_data = nullptr;  // null: the method may have no named data values
  // Inits delegate call `call`, whose inputs have `input_specs`; `label` names the instruction
  // ("method 'prefill' instruction 0") and the context's errors carry it; empty: no delegate calls.
  std::function<Result<PreparedDelegate>(const DelegateCallSpec& call, std::span<const TensorSpec> input_specs,
                                         const std::string& label)>
      init_delegate;
};

// Which kernel or delegate runs each instruction, for reports and tests.
struct InstructionChoice {
  std::string label;                         // "instruction 3 (linear)"
  std::string runner;                        // "portable.linear", or the delegate's description
  std::string op;                            // a kernel call's op ("linear"); empty for a delegate call
  const DelegateHandle* delegate = nullptr;  // a delegate call's (owned by the method), else null
};

class PreparedMethod {
 public:
  // Verifies and prepares `method` (see above). Fails with InvalidArgument naming the method,
  // instruction and value; Unimplemented when no kernel or backend runs an instruction; the
  // delegate's init error; ResourceExhausted when a size overflows.
  static Result<std::unique_ptr<PreparedMethod>> prepare(MethodSpec method, const PrepareContext& context);
  ~PreparedMethod();
  PreparedMethod(const PreparedMethod&) = delete;
  PreparedMethod& operator=(const PreparedMethod&) = delete;

  const std::string& name() const { return name_; }
  std::span<const IoTensorInfo> inputs() const { return inputs_; }
  std::span<const IoTensorInfo> outputs() const { return outputs_; }
  // Index of the input / output called `name`, or -1.
  int input_index(std::string_view name) const;
  int output_index(std::string_view name) const;
  // Bytes of the arena each session allocates.
  uint64_t arena_bytes() const { return arena_bytes_; }
  std::span<const InstructionChoice> choices() const { return choices_; }
  // The kernel calls' kernels and the features they were selected under; each delegate call's
  // own choices are its handle's to report (InstructionChoice::delegate).
  KernelReport kernel_report() const;

  // A session over this method: its own arena (zeroed), views and delegate instances. `owner`
  // keeps whatever owns this method alive for the session's lifetime (the Program); `pool` runs
  // the kernels' parallel loops. Fails with ResourceExhausted when memory runs out, or with a
  // delegate's new_instance error.
  Result<std::unique_ptr<MethodSession>> new_session(std::shared_ptr<const void> owner, ThreadPool* pool) const;

 private:
  friend class MethodSession;
  struct Step;
  // What a run that reads only part of the outputs computes (MethodSession::execute(needs)).
  struct RunPlan {
    // Per step: kNone skips it, kLastRow runs it with every row of the chunk but the last as
    // padding (KernelContext::padding_rows), kAll runs it whole.
    std::vector<RowNeed> steps;
    std::vector<std::vector<RowNeed>> outputs;  // per step: what is read of a delegate call's outputs
    std::vector<RowNeed> values;                // per value (scratch)
  };
  // Fills `plan` for `needs` (one entry per output), reusing its vectors.
  void plan_run(std::span<const RowNeed> needs, RunPlan& plan) const;
  // Whether value `v`'s rows are the chunk's: [1, ..., 1, chunk_rows, ...], a chunk of more than
  // one row.
  bool chunk_shaped(uint32_t v) const;
  // A delegate step that reads or writes method input / output `value` directly.
  struct IoUse {
    uint32_t step = 0;
    DelegateIoRole role = DelegateIoRole::kInput;
    uint32_t position = 0;
  };
  class Builder;
  PreparedMethod();

  std::string name_;
  std::string label_;
  std::vector<IoTensorInfo> inputs_;
  std::vector<IoTensorInfo> outputs_;
  std::vector<uint32_t> input_values_;
  std::vector<uint32_t> output_values_;
  std::vector<std::vector<IoUse>> input_uses_;
  std::vector<std::vector<IoUse>> output_uses_;
  std::vector<TensorSpec> specs_;       // per value; session views borrow the shapes
  std::vector<ValueStorage> storage_;   // per value
  std::vector<uint64_t> arena_offset_;  // per value (arena storage)
  std::vector<void*> fixed_data_;       // per value: constants and named data, else null
  uint64_t arena_bytes_ = 0;
  uint32_t arena_alignment_ = 64;
  std::vector<Step> steps_;
  std::vector<InstructionChoice> choices_;
  CpuFeatures kernel_features_;  // what the kernel registry was allowed to select by
  // The input holding the positions of the chunk's rows (see KernelContext::padding_rows), or -1.
  int32_t row_positions_value_ = -1;
  int64_t chunk_rows_ = 0;
};

}  // namespace staticlm
