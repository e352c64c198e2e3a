// SPDX-License-Identifier: Apache-2.0
#include "probe_backend.h"

#include <algorithm>
#include <cstring>
#include <map>

#include "staticlm/backends/cpu/export/cpu_backend.h"
#include "staticlm/backends/cpu/runtime/cpu_runtime.h"
#include "staticlm/backends/shm/shared_memory_test_util.h"

namespace staticlm::testing {
namespace {

class ProbeInstance final : public DelegateInstance {
 public:
  ProbeInstance(std::unique_ptr<DelegateInstance> inner, std::shared_ptr<ProbeLog> log)
      : inner_(std::move(inner)), log_(std::move(log)) {}

  Status bind_buffer(const DelegateBufferBinding& binding) override {
    const ExternalBuffer& buffer = *binding.buffer;
    log_->add_binding({binding.role, binding.position, std::string(binding.tensor), buffer.type, buffer.allocator,
                       buffer.fd, buffer.offset, buffer.size});
    Mapped& mapped = mapped_[{binding.role, binding.position}];
    mapped.pointer = buffer.data;
    mapped.size = buffer.size;
    mapped.window.reset();
    if (buffer.has_fd()) {
      // What a driver does: map the fd at the offset, independently of the runner's pointer.
      mapped.window = std::make_unique<FdWindow>(buffer.fd, buffer.offset, static_cast<size_t>(buffer.size));
      if (!mapped.window->ok()) {
        return unavailable("fd_probe: cannot map fd ", buffer.fd, " of '", binding.tensor, "'");
      }
      log_->add_mapping();
    }
    return ok_status();
  }

  Status execute(std::span<const TensorView> inputs, std::span<const TensorView> outputs,
                 const KernelContext& context) override {
    check(DelegateIoRole::kInput, inputs);
    STATICLM_RETURN_IF_ERROR(inner_->execute(inputs, outputs, context));
    check(DelegateIoRole::kOutput, outputs);
    return ok_status();
  }

 private:
  struct Mapped {
    void* pointer = nullptr;
    uint64_t size = 0;
    std::unique_ptr<FdWindow> window;
  };

  void check(DelegateIoRole role, std::span<const TensorView> views) {
    for (size_t p = 0; p < views.size(); ++p) {
      auto it = mapped_.find({role, static_cast<uint32_t>(p)});
      if (it == mapped_.end() || it->second.window == nullptr) {
        continue;
      }
      const Mapped& mapped = it->second;
      const auto* through_view = static_cast<const uint8_t*>(views[p].raw());
      const bool same_pointer = views[p].raw() == mapped.pointer;
      const bool same_bytes = std::memcmp(mapped.window->data(), through_view, mapped.size) == 0;
      const uint8_t* fd_bytes = mapped.window->data();
      const auto nonzero = std::count_if(fd_bytes, fd_bytes + mapped.size, [](uint8_t b) { return b != 0; });
      log_->add_check(same_pointer, same_bytes, static_cast<uint64_t>(nonzero));
    }
  }

  std::unique_ptr<DelegateInstance> inner_;
  std::shared_ptr<ProbeLog> log_;
  std::map<std::pair<DelegateIoRole, uint32_t>, Mapped> mapped_;
};

class ProbeHandle final : public DelegateHandle {
 public:
  ProbeHandle(std::unique_ptr<DelegateHandle> inner, std::shared_ptr<ProbeLog> log)
      : inner_(std::move(inner)), log_(std::move(log)) {}
  std::span<const TensorSpec> output_specs() const override { return inner_->output_specs(); }
  std::span<const uint32_t> updated_inputs() const override { return inner_->updated_inputs(); }
  Result<std::unique_ptr<DelegateInstance>> new_instance() const override {
    STATICLM_ASSIGN_OR_RETURN(std::unique_ptr<DelegateInstance> inner, inner_->new_instance());
    return std::unique_ptr<DelegateInstance>(std::make_unique<ProbeInstance>(std::move(inner), log_));
  }

 private:
  std::unique_ptr<DelegateHandle> inner_;
  std::shared_ptr<ProbeLog> log_;
};

class ProbeRuntime final : public BackendRuntime {
 public:
  ProbeRuntime(std::shared_ptr<ProbeLog> log, std::string preferred)
      : log_(std::move(log)),
        preferred_(std::move(preferred)),
        cpu_(*CpuBackendRuntime::create(std::string(kProbeBackendId))) {}
  std::string_view id() const override { return kProbeBackendId; }
  const OptionSchema& runtime_options() const override { return cpu_->runtime_options(); }
  std::string_view preferred_allocator() const override { return preferred_; }
  Result<std::unique_ptr<DelegateHandle>> init(const DelegateInit& init) const override {
    STATICLM_ASSIGN_OR_RETURN(std::unique_ptr<DelegateHandle> inner, cpu_->init(init));
    return std::unique_ptr<DelegateHandle>(std::make_unique<ProbeHandle>(std::move(inner), log_));
  }

 private:
  std::shared_ptr<ProbeLog> log_;
  std::string preferred_;
  std::shared_ptr<CpuBackendRuntime> cpu_;
};

}  // namespace

void ProbeLog::add_binding(const ProbeBinding& binding) {
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.bindings.push_back(binding);
}

void ProbeLog::add_check(bool same_pointer, bool same_bytes, uint64_t nonzero) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++stats_.views_checked;
  stats_.nonzero_bytes_seen += nonzero;
  stats_.pointer_mismatches += same_pointer ? 0 : 1;
  stats_.byte_mismatches += same_bytes ? 0 : 1;
}

void ProbeLog::add_mapping() {
  std::lock_guard<std::mutex> lock(mutex_);
  ++stats_.fds_mapped;
}

ProbeStats ProbeLog::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

ProbeBackend::ProbeBackend() {
  schema_.backend_id = std::string(kProbeBackendId);
  schema_.options = partitioner_option_specs();
}

Result<DelegatePayload> ProbeBackend::preprocess(const PartitionSubgraph& partition, const ResolvedOptions&) const {
  return lower_cpu_partition(partition);
}

std::shared_ptr<const BackendRuntime> make_probe_runtime(std::shared_ptr<ProbeLog> log,
                                                         std::string preferred_allocator) {
  return std::make_shared<ProbeRuntime>(std::move(log), std::move(preferred_allocator));
}

}  // namespace staticlm::testing
