// SPDX-License-Identifier: Apache-2.0
// libFuzzer: a prompt, as a user types it, through to generation on the smallest fixture (the
// llama checkpoint exported once, on the portable kernels): tokenizing arbitrary bytes, prompts
// longer than the cache, special-token text. Every outcome must be text or a Status.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string_view>

#include "staticlm/backends/portable/register.h"
#include "staticlm/exporter/hf_static_export.h"
#include "staticlm/llm/engine.h"

namespace {

struct Model {
  std::unique_ptr<staticlm::Engine> engine;
  std::unique_ptr<staticlm::LlmSession> session;
};

Model& model() {
  static Model* loaded = [] {
    const std::string path =
        (std::filesystem::temp_directory_path() / ("staticlm_generation_fuzz_" + std::to_string(getpid()) + ".slm"))
            .string();
    staticlm::HfStaticExportOptions options;
    options.prefill_len = 8;
    options.max_cache_len = 48;
    auto exported =
        staticlm::export_hf_static(std::string(STATICLM_SOURCE_DIR) + "/tests/fixtures/llama", path, options);
    if (!exported.ok()) {
      std::fprintf(stderr, "generation_fuzz: export failed: %s\n", exported.status().to_string().c_str());
      std::abort();
    }
    staticlm::EngineRuntime runtime;
    auto kernels = std::make_shared<staticlm::KernelRegistry>();
    (void)staticlm::register_portable_kernels(*kernels);
    auto contracts = std::make_shared<staticlm::ContractRegistry>();
    (void)staticlm::register_builtin_contracts(*contracts);
    runtime.kernels = kernels;
    runtime.backends = std::make_shared<staticlm::BackendRuntimeRegistry>();
    runtime.contracts = contracts;
    runtime.allocators = std::make_shared<staticlm::AllocatorRegistry>();
    staticlm::EngineOptions engine_options;
    engine_options.num_threads = 1;
    auto engine = staticlm::Engine::open(path, engine_options, std::move(runtime));
    std::filesystem::remove(path);  // mapped: the open file stays readable
    if (!engine.ok()) {
      std::fprintf(stderr, "generation_fuzz: open failed: %s\n", engine.status().to_string().c_str());
      std::abort();
    }
    auto* out = new Model{std::move(*engine), nullptr};
    out->session = out->engine->new_session().value();
    return out;
  }();
  return *loaded;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Model& m = model();
  const std::string_view prompt(reinterpret_cast<const char*>(data), size);
  staticlm::GenerationOptions options = m.engine->default_generation();
  options.max_new_tokens = 3;
  options.reuse_cached_prefix = size % 2 == 0;  // both the reset and the reuse path
  options.stop_strings = {"\n"};
  (void)m.engine->generate(*m.session, prompt, options);
  return 0;
}
