// SPDX-License-Identifier: Apache-2.0
// hf_static v1 is spelled once (contracts/hf_static_v1_spec.h): every program the exporter writes
// carries only keys the contract defines (or the program-level placement), each of its declared
// type and value set, and every required one; docs/hf_static_v1.md's tables name exactly the
// keys, methods and tensors the code does.
#include <fstream>
#include <set>

#include <gtest/gtest.h>

#include "staticlm/backends/cpu/export/cpu_backend.h"
#include "staticlm/contracts/hf_static_v1_spec.h"
#include "staticlm/exporter/hf_static_export.h"
#include "staticlm/format/metadata.h"

#include "export_helpers.h"
#include "fixture_reference.h"

namespace staticlm {
namespace {

namespace spec = hf_static_v1;

std::string read_doc() {
  std::ifstream in(std::string(STATICLM_SOURCE_DIR) + "/docs/hf_static_v1.md");
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void expect_program_follows_the_spec(const std::string& path) {
  auto file = ProgramFile::open(path);
  ASSERT_TRUE(file.ok()) << file.status().to_string();
  std::set<std::string> seen;
  for (const fb::MetadataEntry* entry : *(*file)->program().metadata()) {
    const std::string key = entry->key()->str();
    seen.insert(key);
    if (spec::is_program_level_key(key)) {
      continue;
    }
    const spec::MetadataKey* known = spec::find_metadata_key(key);
    ASSERT_NE(known, nullptr) << "the exporter writes '" << key << "', which the contract does not define";
    EXPECT_EQ(entry->type(), known->type) << key << " is " << metadata_type_name(entry->type());
    if (!known->values.empty()) {
      const std::string value = metadata_value_string(*entry);
      EXPECT_NE(std::find(known->values.begin(), known->values.end(), value), known->values.end())
          << key << " = " << value;
    }
  }
  for (const spec::MetadataKey& key : spec::metadata_keys()) {
    if (key.required) {
      EXPECT_EQ(seen.count(std::string(key.key)), 1u) << "required key '" << key.key << "' is missing";
    }
  }
  EXPECT_TRUE(spec::Config::from_program(**file).ok());
}

TEST(ContractSpecTest, EveryExportedKeyIsOneTheContractDefines) {
  auto backend = CpuBackend::create();
  ASSERT_TRUE(backend.ok());
  int exported = 0;
  for (const std::string family : {"llama", "llama3", "qwen2", "mistral", "qwen3", "gemma3", "gemma2", "phi3",
                                   "smollm3", "granite", "olmo2", "mistral_window", "qwen2_window"}) {
    const std::string dir = testing::load_fixture_reference(family).dir;
    for (int variant = 0; variant < 3; ++variant) {
      HfStaticExportOptions options = testing::small_options();
      if (variant == 1) {
        options.kv_update = KvUpdateForm::kReturned;
        options.logits = LogitsMode::kLast;
        options.cache_dtype = DType::kF16;
      } else if (variant == 2) {
        options.backend = backend->get();
      }
      const std::string path = testing::temp_path(family + "_contract_" + std::to_string(variant) + ".slm");
      ASSERT_TRUE(export_hf_static(dir, path, options).ok()) << family << " " << variant;
      SCOPED_TRACE(family + " variant " + std::to_string(variant));
      expect_program_follows_the_spec(path);
      ++exported;
    }
  }
  EXPECT_EQ(exported, 39);
}

TEST(ContractSpecTest, TheDocumentListsExactlyTheKeysOfTheCode) {
  const std::string doc = read_doc();
  ASSERT_FALSE(doc.empty());
  const size_t section = doc.find("## Metadata keys");
  ASSERT_NE(section, std::string::npos);
  const std::string table = doc.substr(section, doc.find("\n## ", section + 1) - section);
  // Rows "| `key` | type | yes|no | meaning |", split by hand (std::regex trips GCC 12's
  // -Wmaybe-uninitialized under the sanitizers).
  std::vector<std::tuple<std::string, std::string, bool>> documented;
  size_t at = 0;
  while ((at = table.find("\n| `", at)) != std::string::npos) {
    const size_t line_end = table.find('\n', at + 1);
    std::vector<std::string> cells;
    const std::string line = table.substr(at + 3, line_end - at - 3);  // after "\n| "
    for (size_t start = 0, bar; (bar = line.find(" | ", start)) != std::string::npos; start = bar + 3) {
      cells.push_back(line.substr(start, bar - start));
    }
    at = line_end;
    if (cells.size() < 3 || cells[0].size() < 3) continue;
    documented.emplace_back(cells[0].substr(1, cells[0].size() - 2), cells[1], cells[2] == "yes");
  }
  std::vector<std::tuple<std::string, std::string, bool>> in_code;
  for (const spec::MetadataKey& key : spec::metadata_keys()) {
    in_code.emplace_back(std::string(key.key), std::string(metadata_type_name(key.type)), key.required);
  }
  EXPECT_EQ(documented, in_code);
}

TEST(ContractSpecTest, TheDocumentNamesTheMethodsAndTensorsOfTheCode) {
  const std::string doc = read_doc();
  auto per_layer = [](std::string name) { return "`" + name.substr(0, name.rfind('_') + 1) + "{l}`"; };
  for (const std::string& name : {std::string(spec::kPrefill), std::string(spec::kDecode), std::string(spec::kInputIds),
                                  std::string(spec::kCachePosition), std::string(spec::kLogits)}) {
    EXPECT_NE(doc.find("| `" + name + "` |"), std::string::npos) << name;
  }
  for (const std::string& name : {per_layer(spec::key_cache_name(3)), per_layer(spec::value_cache_name(3)),
                                  per_layer(spec::new_key_name(3)), per_layer(spec::new_value_name(3))}) {
    EXPECT_NE(doc.find(name), std::string::npos) << name;
  }
  const spec::Config config{.vocab_size = 10,
                            .num_layers = 2,
                            .num_kv_heads = 2,
                            .head_dim = 4,
                            .max_cache_len = 16,
                            .prefill_len = 8,
                            .kv_returned = true};
  EXPECT_EQ(spec::expected_inputs(config, 8).size(), 2u + 2 * 2);
  EXPECT_EQ(spec::expected_outputs(config, 1).size(), 1u + 2 * 2);
  EXPECT_EQ(spec::expected_outputs(config, 8)[1].shape, (Shape{1, 2, 8, 4}));
}

}  // namespace
}  // namespace staticlm
