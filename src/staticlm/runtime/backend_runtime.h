// SPDX-License-Identifier: Apache-2.0
// The runtime side of a delegate backend, in three lifetimes:
// - BackendRuntime: the backend itself (one per process, registered by id). It declares its
//   runtime options (a schema, validated like export options) and the I/O allocator whose
//   memory it reads without a copy.
// - DelegateHandle: one delegate call of a loaded program, prepared once by init() from the blob,
//   compile specs, call input specs, the program's named data and the backend's resolved runtime
//   options. Immutable and shared by every session of the program.
// - DelegateInstance: that call's per-session state (scratch arena, registered buffers), made by
//   new_instance() for each session. bind_buffer() hands it each method I/O tensor the call
//   reads or writes directly, with the buffer's identity (ExternalBuffer: fd, offset, size,
//   allocator) when the caller binds it, so a backend registers device memory once; execute()
//   runs the call.
// A backend that picks a kernel for each node from a KernelRegistry (cpu) says which through
// DelegateHandle::kernel_report(), for `staticlm inspect --kernels`.
// The runtime checks a delegate's declared outputs and in-place updates against the program
// values they touch (through the delegate's recorded output order) before anything runs.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "staticlm/core/result.h"
#include "staticlm/core/tensor.h"
#include "staticlm/options/option_schema.h"
#include "staticlm/runtime/external_buffer.h"
#include "staticlm/runtime/kernel.h"
#include "staticlm/runtime/named_data.h"

namespace staticlm {

struct CompileSpecView {
  std::string_view key;
  std::span<const uint8_t> value;
};

struct DelegateInit {
  std::string_view label;  // "method 'prefill' instruction 0 (delegate 0, backend 'cpu')"
  std::span<const uint8_t> blob;
  std::span<const CompileSpecView> compile_specs;
  std::span<const TensorSpec> inputs;        // specs of the program values passed in, in call order
  const NamedDataMap* named_data = nullptr;  // the program's named data; never null
  const ResolvedOptions* options = nullptr;  // this backend's runtime options; never null
};

enum class DelegateIoRole : uint8_t { kInput, kOutput };

// One method I/O tensor that a delegate call reads (a call input) or writes (a call output).
struct DelegateBufferBinding {
  DelegateIoRole role = DelegateIoRole::kInput;
  uint32_t position = 0;    // call input position, or the delegate's internal output index
  std::string_view tensor;  // the method's name for it ("k_cache_3")
  TensorSpec spec;
  const ExternalBuffer* buffer = nullptr;  // never null
};

// The kernel chosen for one node (a kernel call) of a prepared instruction list.
struct NodeKernel {
  std::string node;    // "instruction 3 (linear)"
  std::string op;      // "linear"
  std::string kernel;  // the KernelRegistry entry that made it: "cpu.avx2.linear"
};

// Which kernel runs each node, and the CPU features the selection was allowed (the host's, capped
// by the runtime options), which say why a kernel of a wider ISA was passed over.
struct KernelReport {
  std::string features;  // CpuFeatures::to_string(): "avx2 avx_vnni", "neon fp16 dotprod", "none"
  std::vector<NodeKernel> nodes;
};

class DelegateInstance {
 public:
  virtual ~DelegateInstance() = default;
  // Called when the caller binds a method input or output this call uses directly, before the
  // first execute that sees it, and again when it is rebound. The buffer stays valid while it is
  // bound. An error fails the bind.
  virtual Status bind_buffer(const DelegateBufferBinding& binding) {
    (void)binding;
    return ok_status();
  }
  // `outputs` are in the delegate's internal order (the runtime has applied the output map).
  virtual Status execute(std::span<const TensorView> inputs, std::span<const TensorView> outputs,
                         const KernelContext& context) = 0;
};

class DelegateHandle {
 public:
  virtual ~DelegateHandle() = default;
  // The outputs this delegate produces, in its own internal order.
  virtual std::span<const TensorSpec> output_specs() const = 0;
  // Positions of the call inputs this delegate writes in place (as an op with in_place_updates
  // does: a KV cache). The runtime refuses the call at load unless each is writable (arena,
  // output, or a mutable input), so a file cannot make a delegate write a constant.
  virtual std::span<const uint32_t> updated_inputs() const { return {}; }
  // A fresh per-session state. Fails with ResourceExhausted when its memory cannot be had.
  virtual Result<std::unique_ptr<DelegateInstance>> new_instance() const = 0;
  // The kernel init chose for each node, where the backend chooses them from a KernelRegistry.
  // nullopt (the default) for a backend that hands its graph to an SDK (qnn), whose kernels the
  // runtime never sees.
  virtual std::optional<KernelReport> kernel_report() const { return std::nullopt; }
};

class BackendRuntime {
 public:
  virtual ~BackendRuntime() = default;
  virtual std::string_view id() const = 0;
  // The runtime options it takes (backend_id = id()); resolve_options checks them at load.
  virtual const OptionSchema& runtime_options() const = 0;
  // The SDK that version-gated runtime options are checked against (name empty: none).
  virtual SdkInfo sdk() const { return {}; }
  // The I/O allocator (an AllocatorRegistry name) whose buffers it reads without a copy, or ""
  // when heap memory is as good as any.
  virtual std::string_view preferred_allocator() const { return {}; }
  // Fails with Unavailable when the backend's SDK or device is missing, InvalidArgument (or
  // DataLoss) when the blob or compile specs are malformed.
  virtual Result<std::unique_ptr<DelegateHandle>> init(const DelegateInit& init) const = 0;
};

// Backends by id, filled explicitly (one register function per backend).
class BackendRuntimeRegistry {
 public:
  // Fails with InvalidArgument when the id is taken, Internal when its option schema is
  // inconsistent or names another backend.
  Status add(std::shared_ptr<const BackendRuntime> backend);
  const BackendRuntime* find(std::string_view id) const;
  std::vector<std::string> ids() const;

 private:
  std::map<std::string, std::shared_ptr<const BackendRuntime>, std::less<>> backends_;
};

}  // namespace staticlm
