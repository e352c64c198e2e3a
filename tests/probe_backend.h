// SPDX-License-Identifier: Apache-2.0
// A test delegate backend that checks, from the backend's side, that I/O buffers arrive
// zero-copy. Its export side lowers partitions as the cpu backend does (under id "fd_probe"); its
// run side wraps the cpu runtime. Every bound buffer's identity is recorded; for fd-backed ones
// the probe maps the fd itself, and around every call it checks that the call's views are the
// very pointers the runner bound and that their bytes are the bytes visible through its own
// mapping of the fd (inputs before the call, outputs after it).
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "staticlm/backends/api/backend.h"
#include "staticlm/runtime/backend_runtime.h"

namespace staticlm::testing {

inline constexpr std::string_view kProbeBackendId = "fd_probe";

struct ProbeBinding {
  DelegateIoRole role = DelegateIoRole::kInput;
  uint32_t position = 0;
  std::string tensor;
  ExternalBufferType type = ExternalBufferType::kHostAllocation;
  std::string allocator;
  int fd = -1;
  uint64_t offset = 0;
  uint64_t size = 0;
};

struct ProbeStats {
  std::vector<ProbeBinding> bindings;
  uint64_t fds_mapped = 0;
  uint64_t views_checked = 0;       // call views compared with the fd mapping
  uint64_t nonzero_bytes_seen = 0;  // of those, bytes that were not zero (so equality means something)
  uint64_t pointer_mismatches = 0;  // a view that is not the pointer the runner bound
  uint64_t byte_mismatches = 0;     // a view whose bytes differ from the fd mapping
};

// The probe's record, shared by every delegate of the runtime; thread-safe.
class ProbeLog {
 public:
  void add_binding(const ProbeBinding& binding);
  void add_check(bool same_pointer, bool same_bytes, uint64_t nonzero);
  void add_mapping();
  ProbeStats stats() const;

 private:
  mutable std::mutex mutex_;
  ProbeStats stats_;
};

class ProbeBackend final : public Backend {
 public:
  ProbeBackend();
  std::string_view id() const override { return kProbeBackendId; }
  std::string_view summary() const override { return "test: checks buffer identity from the delegate's side"; }
  const OptionSchema& option_schema() const override { return schema_; }
  NodeSupport supports(const Graph&, size_t, const ResolvedOptions&) const override { return NodeSupport::yes(); }
  Result<DelegatePayload> preprocess(const PartitionSubgraph& partition, const ResolvedOptions& options) const override;

 private:
  OptionSchema schema_;
};

// The run side; `preferred_allocator` is what it asks the engine for.
std::shared_ptr<const BackendRuntime> make_probe_runtime(std::shared_ptr<ProbeLog> log,
                                                         std::string preferred_allocator = "");

}  // namespace staticlm::testing
