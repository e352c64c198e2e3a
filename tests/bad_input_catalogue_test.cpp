// SPDX-License-Identifier: Apache-2.0
// The bad-input catalogue (docs/security.md): hostile or broken input of every kind staticlm reads,
// each with the error it must produce. One table, one test: nothing may crash, hang, allocate
// without bound or be accepted, and every refusal must say what is wrong where.
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "staticlm/backends/cpu/export/cpu_backend.h"
#include "staticlm/backends/qnn/export/qnn_backend.h"
#include "staticlm/builtin/builtin_runtime.h"
#include "staticlm/chat/chat_template.h"
#include "staticlm/core/mapped_file.h"
#include "staticlm/exporter/hf_config.h"
#include "staticlm/exporter/hf_static_export.h"
#include "staticlm/exporter/safetensors.h"
#include "staticlm/format/program_file.h"
#include "staticlm/format/program_writer.h"
#include "staticlm/options/option_value.h"
#include "staticlm/partition/partitioner.h"
#include "staticlm/server/completion_request.h"

#include "export_helpers.h"
#include "fixture_reference.h"

namespace staticlm {
namespace {

namespace fs = std::filesystem;
using Bytes = std::vector<uint8_t>;

struct Case {
  std::string name;
  StatusCode code;
  std::string expected;  // a substring of the message
  std::function<Status()> run;
};

Bytes bytes_of(std::string_view text) {
  return Bytes(text.begin(), text.end());
}

// A small exported program's bytes, for corrupting.
const Bytes& program_bytes() {
  static const Bytes bytes = [] {
    const std::string path = testing::temp_path("catalogue_program.slm");
    EXPECT_TRUE(export_hf_static(testing::fixture_dir("llama"), path, testing::small_options()).ok());
    std::ifstream in(path, std::ios::binary);
    return Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }();
  return bytes;
}

Status open_program(Bytes bytes) {
  static std::vector<Bytes> kept;  // from_bytes borrows: keep each alive for the file it opens
  kept.push_back(std::move(bytes));
  return ProgramFile::from_bytes(kept.back(), "hostile.slm").status();
}

Bytes with(Bytes bytes, size_t at, std::string_view replacement) {
  std::memcpy(bytes.data() + at, replacement.data(), replacement.size());
  return bytes;
}

// A safetensors file: an 8-byte little-endian header length, the header, then `data`.
Bytes safetensors(const std::string& header, size_t data = 16, uint64_t claimed = 0) {
  const uint64_t length = claimed != 0 ? claimed : header.size();
  std::string text(8, '\0');
  std::memcpy(text.data(), &length, 8);
  text += header;
  text.append(data, '\0');
  return Bytes(text.begin(), text.end());
}

Status parse_st(const Bytes& bytes) {
  return parse_safetensors(bytes, "hostile.safetensors").status();
}

// A checkpoint directory: the llama fixture with files replaced.
std::string checkpoint(const std::string& name, const std::vector<std::pair<std::string, std::string>>& files) {
  const std::string dir = testing::temp_path("catalogue_" + name);
  fs::remove_all(dir);
  fs::copy(testing::fixture_dir("llama"), dir);
  for (const auto& [file, text] : files) {
    std::ofstream(dir + "/" + file, std::ios::binary | std::ios::trunc) << text;
  }
  return dir;
}

// config.json of the llama fixture with one key changed (null removes it).
std::string config_with(const std::string& key, const nlohmann::json& value) {
  auto config = nlohmann::json::parse(read_text_file(testing::fixture_dir("llama") + "/config.json").value());
  if (value.is_null()) {
    config.erase(key);
  } else {
    config[key] = value;
  }
  return config.dump();
}

Status load_config(const std::string& name, const std::vector<std::pair<std::string, std::string>>& files) {
  return HfConfig::load(checkpoint(name, files)).status();
}

Status tokenizer_json(std::string_view text) {
  return load_tokenizer_json(text, std::nullopt).status();
}

std::string fixture_tokenizer_with(const std::function<void(nlohmann::ordered_json&)>& change) {
  auto json = nlohmann::ordered_json::parse(read_text_file(testing::fixture_dir("llama") + "/tokenizer.json").value());
  change(json);
  return json.dump();
}

Status options(std::string_view backend_id, std::string_view json) {
  static const BackendRegistry* registry = [] {
    auto* out = new BackendRegistry();
    EXPECT_TRUE(register_cpu_backend(*out).ok());
    EXPECT_TRUE(register_qnn_backend(*out).ok());
    return out;
  }();
  STATICLM_ASSIGN_OR_RETURN(OptionMap map, parse_options_json(json, "hostile.json"));
  STATICLM_ASSIGN_OR_RETURN(const Backend* backend, registry->get(backend_id));
  return Partitioner::from_options(*backend, map).status();
}

Status render(std::string source) {
  STATICLM_ASSIGN_OR_RETURN(ChatTemplate parsed, ChatTemplate::parse(std::move(source), "hostile.jinja", {}));
  ChatRenderInputs inputs;
  inputs.messages = nlohmann::ordered_json::parse(R"([{"role": "user", "content": "hi"}])");
  return parsed.render(inputs).status();
}

Status request(std::string_view body) {
  return server::parse_completion_request(body, server::Endpoint::kChatCompletions, {}).status();
}

// The engine over the exported fixture program, for prompts and generation options.
Engine& engine() {
  static Engine* opened = [] {
    const std::string path = testing::temp_path("catalogue_engine.slm");
    EXPECT_TRUE(export_hf_static(testing::fixture_dir("llama"), path, testing::small_options()).ok());
    auto runtime = builtin_engine_runtime();
    return Engine::open(path, {}, std::move(*runtime)).value().release();
  }();
  return *opened;
}

Status generate(std::string_view prompt, const std::function<void(GenerationOptions&)>& change = {}) {
  STATICLM_ASSIGN_OR_RETURN(std::unique_ptr<LlmSession> session, engine().new_session());
  GenerationOptions options = engine().default_generation();
  options.max_new_tokens = 4;
  if (change) {
    change(options);
  }
  return engine().generate(*session, prompt, options).status();
}

// A program whose contract metadata is changed before it is written.
Status open_tampered(const std::string& name, const std::function<void(ProgramSpec&)>& change) {
  auto build = build_hf_static(testing::fixture_dir("llama"), testing::small_options());
  STATICLM_RETURN_IF_ERROR(build.status());
  change(build->spec);
  const std::string path = testing::temp_path("catalogue_" + name + ".slm");
  STATICLM_RETURN_IF_ERROR(write_program(build->spec, path).status());
  STATICLM_ASSIGN_OR_RETURN(EngineRuntime runtime, builtin_engine_runtime());
  return Engine::open(path, {}, std::move(runtime)).status();
}

void set_metadata(ProgramSpec& spec, const std::string& key, MetadataValue value) {
  for (MetadataSpec& entry : spec.metadata) {
    if (entry.key == key) {
      entry.value = std::move(value);
    }
  }
}

std::vector<Case> catalogue() {
  using C = StatusCode;
  const Bytes& program = program_bytes();
  // Static: the cases run after catalogue() returns, and capture it by reference.
  static const std::string tensor = R"("w": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]})";
  return {
      // Program files.
      {"empty program", C::kDataLoss, "truncated", [] { return open_program({}); }},
      {"program cut inside its header", C::kDataLoss, "truncated",
       [&] { return open_program(Bytes(program.begin(), program.begin() + 20)); }},
      {"program cut in half", C::kDataLoss, "truncated",
       [&] { return open_program(Bytes(program.begin(), program.begin() + program.size() / 2)); }},
      {"program with another file's magic", C::kDataLoss, "bad magic 'XLMP' (expected 'SLMP')",
       [&] { return open_program(with(program, 0, "XLMP")); }},
      {"a GGUF file as a program", C::kInvalidArgument,
       "a GGUF file (llama.cpp's format), not a staticlm program: export the model's Hugging Face checkpoint",
       [&] { return open_program(with(program, 0, "GGUF")); }},
      {"a safetensors file as a program", C::kInvalidArgument, "a safetensors file, not a staticlm program",
       [] {
         return open_program(safetensors(R"({"w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}})", 64));
       }},
      {"a checkpoint directory as a program", C::kInvalidArgument,
       "is a Hugging Face checkpoint directory, not a program: make one with `staticlm export",
       [] { return ProgramFile::open(testing::fixture_dir("llama")).status(); }},
      {"program with a garbled flatbuffer", C::kDataLoss, "corrupt program flatbuffer",
       [&] {
         Bytes garbled = program;
         for (size_t i = 64; i < 512 && i < garbled.size(); i += 7) garbled[i] ^= 0x5a;
         return open_program(garbled);
       }},
      {"text file as a program", C::kDataLoss, "truncated", [] { return open_program(bytes_of("hello, world\n")); }},
      {"program with a flipped weight bit, verified", C::kDataLoss, "differs from what was written",
       [&] {
         Bytes flipped = program;
         flipped[flipped.size() - 64] ^= 0x04;  // the last data segment: weights
         static std::vector<Bytes> kept;
         kept.push_back(std::move(flipped));
         STATICLM_ASSIGN_OR_RETURN(std::unique_ptr<ProgramFile> file,
                                   ProgramFile::from_bytes(kept.back(), "hostile.slm"));
         return file->verify_contents();
       }},
      {"missing program file", C::kNotFound, "no such file",
       [] { return ProgramFile::open(testing::temp_path("no_such.slm")).status(); }},
      {"directory as a program", C::kInvalidArgument, "is a directory, not a program file (.slm)",
       [] { return ProgramFile::open(testing::temp_path("")).status(); }},

      // Safetensors.
      {"safetensors shorter than its length field", C::kDataLoss, "8", [] { return parse_st(bytes_of("abc")); }},
      {"safetensors header longer than the file", C::kDataLoss, "header",
       [&] { return parse_st(safetensors("{" + tensor + "}", 16, 4096)); }},
      {"safetensors header of absurd length", C::kInvalidArgument, "exceeds the limit of 100000000 bytes",
       [&] { return parse_st(safetensors("{" + tensor + "}", 16, uint64_t{1} << 62)); }},
      {"safetensors header that is not JSON", C::kInvalidArgument, "JSON",
       [] { return parse_st(safetensors("{oops")); }},
      {"safetensors header that is an array", C::kInvalidArgument, "object",
       [] { return parse_st(safetensors("[]")); }},
      {"safetensors unknown dtype", C::kInvalidArgument, "unsupported dtype Q9",
       [] { return parse_st(safetensors(R"({"w": {"dtype": "Q9", "shape": [2], "data_offsets": [0, 2]}})")); }},
      {"safetensors overlapping tensors", C::kInvalidArgument, "overlap",
       [] {
         return parse_st(safetensors(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                                          "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}})"));
       }},
      {"safetensors offsets past the data", C::kInvalidArgument, "reach beyond the data buffer",
       [] { return parse_st(safetensors(R"({"w": {"dtype": "F32", "shape": [8], "data_offsets": [0, 32]}})")); }},
      {"safetensors offsets reversed", C::kInvalidArgument, "data_offsets",
       [] { return parse_st(safetensors(R"({"w": {"dtype": "F32", "shape": [0], "data_offsets": [8, 0]}})")); }},
      {"safetensors size not dtype x shape", C::kInvalidArgument, "bytes",
       [] { return parse_st(safetensors(R"({"w": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}})")); }},
      {"safetensors negative dimension", C::kInvalidArgument, "shape",
       [] { return parse_st(safetensors(R"({"w": {"dtype": "F32", "shape": [-2], "data_offsets": [0, 8]}})")); }},
      {"safetensors offsets that wrap", C::kInvalidArgument, "data_offsets",
       [] {
         return parse_st(
             safetensors(R"({"w": {"dtype": "F32", "shape": [2], "data_offsets": [18446744073709551615, 7]}})"));
       }},
      {"safetensors tensor named twice", C::kInvalidArgument, "key 'w' appears twice",
       [] {
         return parse_st(safetensors(R"({"w": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},
                                          "w": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}})"));
       }},

      // config.json and generation_config.json.
      {"checkpoint without config.json", C::kNotFound, "config.json",
       [] {
         const std::string dir = checkpoint("no_config", {});
         fs::remove(dir + "/config.json");
         return HfConfig::load(dir).status();
       }},
      {"config.json that is not JSON", C::kInvalidArgument, "config.json",
       [] {
         return load_config("config_not_json", {{"config.json", "{\"hidden_size\": "}});
       }},
      {"config.json without architectures", C::kInvalidArgument, "architectures",
       [] {
         return load_config("no_arch", {{"config.json", config_with("architectures", nullptr)}});
       }},
      {"config.json negative hidden_size", C::kInvalidArgument, "hidden_size",
       [] {
         return load_config("neg_hidden", {{"config.json", config_with("hidden_size", -64)}});
       }},
      {"config.json kv heads not dividing heads", C::kInvalidArgument, "num_key_value_heads",
       [] {
         return load_config("kv_heads", {{"config.json", config_with("num_key_value_heads", 3)}});
       }},
      {"config.json unknown rope scaling", C::kUnimplemented, "rope_scaling",
       [] {
         return load_config("rope",
                            {{"config.json", config_with("rope_scaling", {{"rope_type", "yarn"}, {"factor", 2}})}});
       }},
      {"config.json string where a number goes", C::kInvalidArgument, "max_position_embeddings",
       [] {
         return load_config("max_pos", {{"config.json", config_with("max_position_embeddings", "lots")}});
       }},
      {"generation_config.json with a string eos id", C::kInvalidArgument, "eos_token_id",
       [] {
         return load_config("gen_eos", {{"generation_config.json", R"({"eos_token_id": "end"})"}});
       }},

      // tokenizer.json.
      {"tokenizer.json that is not JSON", C::kInvalidArgument, "JSON", [] { return tokenizer_json("{\"model\": "); }},
      {"tokenizer.json with an unsupported model", C::kUnimplemented, "WordPiece",
       [] { return tokenizer_json(fixture_tokenizer_with([](auto& j) { j["model"]["type"] = "WordPiece"; })); }},
      {"tokenizer.json vocab id of the wrong type", C::kInvalidArgument, "vocab",
       [] { return tokenizer_json(fixture_tokenizer_with([](auto& j) { j["model"]["vocab"]["hello"] = "five"; })); }},
      {"tokenizer.json merge of unknown tokens", C::kInvalidArgument, "merge",
       [] {
         return tokenizer_json(fixture_tokenizer_with(
             [](auto& j) { j["model"]["merges"] = nlohmann::ordered_json::array({"nosuch1 nosuch2"}); }));
       }},
      {"tokenizer.json unsupported pre-tokenizer", C::kUnimplemented, "BertPreTokenizer",
       [] {
         return tokenizer_json(fixture_tokenizer_with([](auto& j) {
           j["pre_tokenizer"] = {{"type", "BertPreTokenizer"}};
         }));
       }},
      {"tokenizer.json regex that does not compile", C::kInvalidArgument, "regex",
       [] {
         return tokenizer_json(fixture_tokenizer_with([](auto& j) {
           j["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"Regex", "(unclosed"}}}, {"behavior", "Isolated"}};
         }));
       }},
      {"tokenizer.json added token beyond int32", C::kInvalidArgument, "id",
       [] {
         return tokenizer_json(fixture_tokenizer_with([](auto& j) {
           j["added_tokens"] =
               nlohmann::ordered_json::array({{{"id", 4294967296}, {"content", "<x>"}, {"special", true}}});
         }));
       }},

      // tokenizer.model.
      {"tokenizer.model of random bytes", C::kInvalidArgument, "tokenizer.model",
       [] { return load_sentencepiece_model(bytes_of("\x0a\xff\xff\xff\xff\x0f garbage")).status(); }},
      {"empty tokenizer.model", C::kInvalidArgument, "tokenizer.model",
       [] { return load_sentencepiece_model(Bytes{}).status(); }},

      // Backend options.
      {"unknown option, with a suggestion", C::kInvalidArgument, "did you mean 'weight_dtype'",
       [] { return options("cpu", R"({"weight_dtyp": "bf16"})"); }},
      {"option of the wrong type", C::kInvalidArgument, "group_size",
       [] { return options("cpu", R"({"group_size": "many"})"); }},
      {"int option inside its range but not one of its values", C::kInvalidArgument,
       "option 'group_size' (hostile.json): expected one of 16, 32, 64, 128, found JSON integer 33",
       [] { return options("cpu", R"({"weight_dtype": "int4", "group_size": 33})"); }},
      {"option value not allowed", C::kInvalidArgument, "weight_dtype",
       [] { return options("cpu", R"({"weight_dtype": "int3"})"); }},
      {"required option missing", C::kInvalidArgument, "soc_model", [] { return options("qnn", "{}"); }},
      {"conflicting options", C::kInvalidArgument, "use_multi_contexts",
       [] { return options("qnn", R"({"soc_model": "SM8650", "online_prepare": true, "use_multi_contexts": true})"); }},
      {"option needing a newer SDK than found", C::kFailedPrecondition, "needs QNN SDK >= 2.39.0",
       [] {
         // Whatever this machine has: an SDK just too old.
         ::setenv("QNN_SDK_VERSION", "2.38.0", 1);
         const Status status = options("qnn", R"({"soc_model": "SM8850", "backend": "lpai"})");
         ::unsetenv("QNN_SDK_VERSION");
         return status;
       }},
      {"options file that is not an object", C::kInvalidArgument, "hostile.json",
       [] { return options("cpu", "[1, 2]"); }},

      // Chat templates.
      {"template with an unclosed tag", C::kInvalidArgument, "line 2", [] { return render("ok\n{% if x %}"); }},
      {"template calling an unknown filter", C::kInvalidArgument, "nosuch", [] { return render("{{ 1 | nosuch }}"); }},
      {"template raising", C::kInvalidArgument, "raised by the template",
       [] { return render("{{ raise_exception('no') }}"); }},
      {"template looping without end", C::kResourceExhausted, "loop iterations",
       [] { return render("{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}"); }},
      {"template nested beyond the parser's limit", C::kInvalidArgument, "nests deeper",
       [] { return render(std::string(3000, '(').insert(0, "{{ ") + "1" + std::string(3000, ')') + " }}"); }},
      {"template building a huge string", C::kResourceExhausted, "bytes",
       [] { return render("{{ 'x' * 100000000 }}"); }},
      {"chat template file that is not UTF-8", C::kInvalidArgument, "not valid UTF-8",
       [] {
         const std::string path = testing::temp_path("not_utf8.jinja");
         std::ofstream(path, std::ios::binary) << "{{ '\xff' }}";
         HfStaticExportOptions export_options = testing::small_options();
         export_options.chat_template_path = path;
         return export_hf_static(testing::fixture_dir("llama"), testing::temp_path("not_utf8.slm"), export_options)
             .status();
       }},

      // HTTP request bodies.
      {"request body that is not JSON", C::kInvalidArgument, "not valid JSON", [] { return request("{\"messages\""); }},
      {"request nested without bound", C::kInvalidArgument, "nests deeper",
       [] { return request(std::string(100000, '[')); }},
      {"request asking for more choices than allowed", C::kInvalidArgument, "'n': expected an integer in [1, 16]",
       [] { return request(R"({"messages": [{"role": "user", "content": "x"}], "n": 1000000})"); }},
      {"request with a number as a string", C::kInvalidArgument, "'temperature'",
       [] { return request(R"({"messages": [{"role": "user", "content": "x"}], "temperature": "0.5"})"); }},
      {"request with an unknown field", C::kInvalidArgument, "'functions'",
       [] { return request(R"({"messages": [{"role": "user", "content": "x"}], "functions": []})"); }},
      {"request with an image", C::kInvalidArgument, "image_url",
       [] { return request(R"({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]})"); }},
      {"request max_tokens beyond any context", C::kInvalidArgument, "'max_tokens'",
       [] { return request(R"({"messages": [{"role": "user", "content": "x"}], "max_tokens": 99999999999})"); }},

      // Prompts and generation settings.
      {"prompt longer than the cache", C::kOutOfRange, "cache positions",
       [] { return generate(std::string(2000, 'a') + " " + std::string(2000, 'b')); }},
      {"empty prompt", C::kInvalidArgument, "no tokens",
       [] { return generate("", [](GenerationOptions& o) { o.add_special_tokens = false; }); }},
      {"prompt token outside the vocabulary", C::kInvalidArgument, "outside the vocabulary",
       [] {
         auto session = engine().new_session().value();
         const std::vector<int32_t> prompt = {1, 999999};
         GenerationOptions options = engine().default_generation();
         options.max_new_tokens = 4;
         return generate_tokens(*session, prompt, options).status();
       }},
      {"sampling with top_p 0", C::kInvalidArgument, "top_p",
       [] { return generate("hi", [](GenerationOptions& o) { o.sampling.top_p = 0.0; }); }},
      {"negative max_new_tokens", C::kInvalidArgument, "max_new_tokens must be >= 0, found -1",
       [] { return generate("hi", [](GenerationOptions& o) { o.max_new_tokens = -1; }); }},

      // Programs whose contract does not match what they hold.
      {"program declaring an unknown contract version", C::kUnimplemented, "hf_static",
       [] {
         return open_tampered("contract_version",
                              [](ProgramSpec& s) { set_metadata(s, "contract_version", int64_t{99}); });
       }},
      {"program whose vocab_size disagrees with its logits", C::kInvalidArgument, "logits",
       [] { return open_tampered("vocab", [](ProgramSpec& s) { set_metadata(s, "vocab_size", int64_t{300}); }); }},
      {"program whose cache length disagrees with its caches", C::kInvalidArgument,
       "input 'k_cache_0': expected f32[1,2,4096,16], found f32[1,2,64,16]",
       [] {
         return open_tampered("cache_len", [](ProgramSpec& s) { set_metadata(s, "max_cache_len", int64_t{4096}); });
       }},
  };
}

TEST(BadInputCatalogueTest, EveryHostileInputGetsItsError) {
  const std::vector<Case> cases = catalogue();
  EXPECT_GE(cases.size(), 60u);
  for (const Case& c : cases) {
    const Status status = c.run();
    EXPECT_FALSE(status.ok()) << c.name << ": accepted";
    if (status.ok()) {
      continue;
    }
    EXPECT_EQ(status_code_name(status.code()), status_code_name(c.code)) << c.name << ": " << status.to_string();
    EXPECT_NE(status.message().find(c.expected), std::string::npos)
        << c.name << ": expected \"" << c.expected << "\" in: " << status.to_string();
  }
}

}  // namespace
}  // namespace staticlm
