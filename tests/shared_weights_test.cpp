// SPDX-License-Identifier: Apache-2.0
// Named shared data for delegates: a cpu-delegated program stores each weight once, as named data
// (no per-method copy, no program constant), and the prefill and decode delegates both read the
// same mapped bytes, checked by a runtime that records what the delegates ask the map for.
#include <map>
#include <mutex>
#include <set>

#include <gtest/gtest.h>

#include "staticlm/backends/cpu/export/cpu_backend.h"
#include "staticlm/backends/cpu/runtime/cpu_runtime.h"
#include "staticlm/exporter/hf_static_export.h"
#include "staticlm/exporter/safetensors.h"
#include "staticlm/ops/weight_layout.h"

#include "export_helpers.h"
#include "fixture_reference.h"
#include "session_helper.h"

namespace staticlm {
namespace {

struct Lookup {
  std::string delegate;
  std::string key;
  const uint8_t* data = nullptr;
  size_t size = 0;
};

// Records every get() a delegate makes, with where the bytes were.
class RecordingMap final : public NamedDataMap {
 public:
  RecordingMap(const NamedDataMap& inner, std::string delegate, std::vector<Lookup>& log, std::mutex& mutex)
      : inner_(inner), delegate_(std::move(delegate)), log_(log), mutex_(mutex) {}
  Result<std::span<const uint8_t>> get(std::string_view key) const override {
    auto bytes = inner_.get(key);
    if (bytes.ok()) {
      std::lock_guard<std::mutex> lock(mutex_);
      log_.push_back({delegate_, std::string(key), bytes->data(), bytes->size()});
    }
    return bytes;
  }

 private:
  const NamedDataMap& inner_;
  std::string delegate_;
  std::vector<Lookup>& log_;
  std::mutex& mutex_;
};

// The cpu runtime, with each delegate's named data lookups recorded.
class RecordingCpuRuntime final : public BackendRuntime {
 public:
  std::string_view id() const override { return "cpu"; }
  const OptionSchema& runtime_options() const override { return cpu_->runtime_options(); }
  Result<std::unique_ptr<DelegateHandle>> init(const DelegateInit& init) const override {
    RecordingMap map(*init.named_data, std::string(init.label), log_, mutex_);
    DelegateInit recorded = init;
    recorded.named_data = &map;
    return cpu_->init(recorded);
  }
  std::vector<Lookup> log() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return log_;
  }

 private:
  std::shared_ptr<CpuBackendRuntime> cpu_ = *CpuBackendRuntime::create();
  mutable std::mutex mutex_;
  mutable std::vector<Lookup> log_;
};

TEST(SharedWeightsTest, ACpuDelegatedProgramHoldsEachWeightOnceAndBothMethodsReadTheSameBytes) {
  for (const std::string family : {"llama", "llama3"}) {  // untied and tied embeddings
    SCOPED_TRACE(family);
    auto backend = CpuBackend::create();
    ASSERT_TRUE(backend.ok());
    HfStaticExportOptions options = testing::small_options();
    options.backend = backend->get();
    options.no_fallback = true;
    const std::string path = testing::temp_path(family + "_shared_weights.slm");
    auto summary = export_hf_static(testing::fixture_dir(family), path, options);
    ASSERT_TRUE(summary.ok()) << summary.status().to_string();

    auto checkpoint = SafetensorsCheckpoint::open(testing::fixture_dir(family));
    ASSERT_TRUE(checkpoint.ok()) << checkpoint.status().to_string();
    auto file = ProgramFile::open(path);
    ASSERT_TRUE(file.ok()) << file.status().to_string();
    const fb::Program& program = (*file)->program();
    EXPECT_EQ(program.constants()->size(), 0u) << "no weight is a program constant as well";
    ASSERT_NE(program.named_data(), nullptr);
    // One entry per checkpoint tensor (a tied lm_head is the embedding table, not a tensor of
    // its own), each holding the tensor at the exported dtype (f32) exactly once: every matrix a
    // linear reads packed in panels of 32 rows (the table too when lm_head shares it), the rest
    // (norm weights, an untied table) as written.
    const bool tied = family == "llama3";
    const std::vector<std::string> tensors = checkpoint->names();
    EXPECT_EQ(program.named_data()->size(), tensors.size());
    uint64_t weight_bytes = 0;
    for (const std::string& name : tensors) {
      const SafetensorsTensor& tensor = **checkpoint->get(name);
      const bool packed = tensor.shape.size() == 2 && (tied || name.find("embed_tokens") == std::string::npos);
      const std::string key =
          cpu_named_data_key(sanitize_constant_name(packed ? str_cat(tensor.name, ".", kPanel32Layout) : tensor.name));
      auto bytes = (*file)->named_data(key);
      ASSERT_TRUE(bytes.has_value()) << key;
      const int64_t elements = packed ? PanelLayout::of(tensor.shape[0], tensor.shape[1], DType::kF32).elements()
                                      : num_elements(tensor.shape);
      EXPECT_EQ(bytes->size(), static_cast<uint64_t>(elements) * 4) << key;
      weight_bytes += bytes->size();
    }
    uint64_t named_bytes = 0;
    for (const fb::NamedData* entry : *program.named_data()) {
      named_bytes += program.segments()->Get(entry->segment())->size();
    }
    EXPECT_EQ(named_bytes, weight_bytes);

    auto recording = std::make_shared<RecordingCpuRuntime>();
    testing::TestRuntimes runtimes;
    BackendRuntimeRegistry registry;
    ASSERT_TRUE(registry.add(recording).ok());
    LoadOptions load = runtimes.load_options();
    load.backends = &registry;
    auto loaded = Program::from_file(std::move(file).value(), load);
    ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();
    std::map<std::string, std::map<std::string, const uint8_t*>> by_key;  // key -> delegate -> bytes
    for (const Lookup& lookup : recording->log()) {
      by_key[lookup.key][lookup.delegate] = lookup.data;
    }
    EXPECT_EQ(by_key.size(), tensors.size());
    for (const auto& [key, delegates] : by_key) {
      ASSERT_EQ(delegates.size(), 2u) << key << ": read by the prefill and the decode delegate";
      const uint8_t* first = delegates.begin()->second;
      EXPECT_EQ(std::next(delegates.begin())->second, first) << key << ": both read the same bytes";
      EXPECT_EQ(first, (*loaded)->file().named_data(key)->data()) << key << ": in the program's mapping";
    }
  }
}

}  // namespace
}  // namespace staticlm
