// The runtime side of a delegate backend. A program's delegate call names a backend by id; at
// method load the runtime asks that backend to init the delegate from its blob and compile
// specs, then checks the delegate's declared outputs against the program values they feed
// (through the delegate's recorded output order) before anything runs.
#pragma once

#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "staticlm/core/result.h"
#include "staticlm/core/tensor.h"
#include "staticlm/runtime/kernel.h"

namespace staticlm {

struct CompileSpecView {
  std::string_view key;
  std::span<const uint8_t> value;
};

struct DelegateInit {
  std::span<const uint8_t> blob;
  std::span<const CompileSpecView> compile_specs;
  std::span<const TensorSpec> inputs;  // specs of the program values passed in, in call order
};

class DelegateHandle {
 public:
  virtual ~DelegateHandle() = default;
  // The outputs this delegate produces, in its own internal order.
  virtual std::span<const TensorSpec> output_specs() const = 0;
  // Positions of the call inputs this delegate writes in place (as an op with in_place_input
  // does: a KV cache). The runtime refuses the call at load unless each is writable (arena,
  // output, or a mutable input), so a file cannot make a delegate write a constant.
  virtual std::span<const uint32_t> updated_inputs() const { return {}; }
  // `outputs` are in the delegate's internal order (the runtime has applied the output map).
  virtual Status execute(std::span<const TensorView> inputs, std::span<const TensorView> outputs,
                         const KernelContext& context) = 0;
};

class BackendRuntime {
 public:
  virtual ~BackendRuntime() = default;
  virtual std::string_view id() const = 0;
  // Fails with Unavailable when the backend's SDK or device is missing, InvalidArgument when
  // the blob or compile specs are malformed.
  virtual Result<std::unique_ptr<DelegateHandle>> init(const DelegateInit& init) const = 0;
};

// Backends by id, filled explicitly (one register function per backend).
class BackendRuntimeRegistry {
 public:
  Status add(std::shared_ptr<const BackendRuntime> backend);
  const BackendRuntime* find(std::string_view id) const;
  std::vector<std::string> ids() const;

 private:
  std::map<std::string, std::shared_ptr<const BackendRuntime>, std::less<>> backends_;
};

}  // namespace staticlm
