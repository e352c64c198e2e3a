// SPDX-License-Identifier: Apache-2.0
// MethodSession: one session's state for one prepared method: its arena, the caller memory bound
// to each input and output, and an instance of every delegate the method calls. Sessions over
// the same PreparedMethod share nothing mutable, so each may run on its own thread. A session is
// used by one thread at a time.
//
// Binding: each input and output is bound by name to caller memory (dtype and byte size
// checked); bindings persist across execute() calls, so a decode loop binds once. Binding with
// an ExternalBuffer also hands its identity (fd, offset, allocator) to every delegate that reads
// or writes that tensor directly (DelegateInstance::bind_buffer), once per bind.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "staticlm/core/aligned_buffer.h"
#include "staticlm/core/result.h"
#include "staticlm/core/tensor.h"
#include "staticlm/runtime/external_buffer.h"
#include "staticlm/runtime/prepared_method.h"

namespace staticlm {

class MethodSession {
 public:
  ~MethodSession();
  MethodSession(const MethodSession&) = delete;
  MethodSession& operator=(const MethodSession&) = delete;

  const PreparedMethod& method() const { return *method_; }
  const std::string& name() const { return method_->name(); }
  std::span<const IoTensorInfo> inputs() const { return method_->inputs(); }
  std::span<const IoTensorInfo> outputs() const { return method_->outputs(); }

  // Binds caller memory to an input / output. Fails with NotFound for an unknown name (listing
  // the known ones), InvalidArgument when dtype or byte size differ from the declaration, and
  // with a delegate's bind_buffer error (with the delegate named).
  Status bind_input(std::string_view name, DType dtype, const ExternalBuffer& buffer);
  Status bind_output(std::string_view name, DType dtype, const ExternalBuffer& buffer);
  // Host memory the caller owns.
  Status bind_input(std::string_view name, DType dtype, void* data, uint64_t nbytes);
  Status bind_output(std::string_view name, DType dtype, void* data, uint64_t nbytes);
  Status bind_input(std::string_view name, Tensor& tensor);
  Status bind_output(std::string_view name, Tensor& tensor);

  // Runs every instruction in order. Fails with FailedPrecondition when an input or output is
  // unbound, and with the failing instruction's error (prefixed with the method and instruction).
  Status execute();
  // Runs as execute(), computing of each output only what `needs` says the caller reads (one
  // entry per output): nothing, the chunk's last row (of an output whose rows are the chunk's;
  // otherwise all of it), or all of it; what is not read is left unwritten, its bytes
  // unspecified. Working back from the needs, an instruction runs on the last row alone where
  // its op is row-wise and nothing reads more of its results, and not at all where nothing reads
  // them (one that writes a method input in place, a KV cache, always runs whole); each delegate
  // call is told what is read of its outputs (KernelContext::output_needs). A prefill chunk whose
  // logits nobody reads skips the head and the last layer after its attention; one whose last
  // row alone is read computes the head, and the last layer after its attention, for that row.
  // Fails as execute() does, and with InvalidArgument when `needs` has the wrong size.
  Status execute(std::span<const RowNeed> needs);

  // For a delegate running this method as its subgraph: binds every input and output by
  // position to the call's views (already checked against the method at init) and runs.
  Status execute_with(std::span<const TensorView> inputs, std::span<const TensorView> outputs,
                      const KernelContext& context);

  // Times every kernel call of execute() into `profile` (null: none), the delegates' own kernel
  // calls included. The profile must outlive the calls.
  void set_op_profile(OpProfile* profile) { op_profile_ = profile; }

 private:
  friend class PreparedMethod;
  MethodSession() = default;
  Status bind(bool input, std::string_view name, DType dtype, const ExternalBuffer& buffer);
  Status check_bound() const;
  // Runs the steps `plan` takes (null: all).
  Status run(const KernelContext& context, const PreparedMethod::RunPlan* plan);
  // The plan for `needs`, made again only when they differ from the last plan's.
  const PreparedMethod::RunPlan& plan_for(std::span<const RowNeed> needs);

  std::shared_ptr<const void> owner_;
  const PreparedMethod* method_ = nullptr;
  ThreadPool* pool_ = nullptr;
  OpProfile* op_profile_ = nullptr;
  AlignedBuffer arena_;
  std::vector<TensorView> values_;  // per value; data pointers patched by bind
  std::vector<bool> input_bound_;
  std::vector<bool> output_bound_;
  std::vector<ExternalBuffer> input_buffers_;  // as bound (their identity outlives the call)
  std::vector<ExternalBuffer> output_buffers_;
  std::vector<std::unique_ptr<DelegateInstance>> delegates_;  // per step; null for kernel steps
  std::vector<std::vector<TensorView>> step_inputs_;          // per step scratch
  std::vector<std::vector<TensorView>> step_outputs_;
  PreparedMethod::RunPlan plan_;
  bool planned_ = false;
  std::vector<RowNeed> planned_for_;  // the needs plan_ was made for
};

}  // namespace staticlm
