// SPDX-License-Identifier: Apache-2.0
#include "staticlm/exporter/hf_static_export.h"

#include <algorithm>
#include <array>
#include <filesystem>
#include <optional>

#include "staticlm/chat/jinja/template.h"
#include "staticlm/contracts/hf_static_v1_spec.h"
#include "staticlm/core/mapped_file.h"
#include "staticlm/core/utf8.h"
#include "staticlm/exporter/hf_config.h"
#include "staticlm/exporter/model_family.h"
#include "staticlm/exporter/safetensors.h"
#include "staticlm/exporter/sha256.h"
#include "staticlm/lowering/lower_program.h"
#include "staticlm/ops/op_set.h"
#include "staticlm/partition/partitioner.h"

namespace staticlm {

struct TokenizerFiles {
  std::vector<EmbeddedFileSpec> files;  // the tokenizer's, then the chat template when there is one
  std::vector<MappedFile> mappings;     // kept alive until the program is written
  std::string kind = std::string(hf_static_v1::kTokenizerNone);
  std::string hash;
};

HfStaticBuild::HfStaticBuild() = default;
HfStaticBuild::~HfStaticBuild() = default;
HfStaticBuild::HfStaticBuild(HfStaticBuild&&) noexcept = default;
HfStaticBuild& HfStaticBuild::operator=(HfStaticBuild&&) noexcept = default;

namespace {

constexpr int64_t kDefaultMaxCacheLen = 2048;
// Tokenizer files embedded, in name order (the order the hash covers them in).
constexpr std::array<std::string_view, 3> kTokenizerFiles = {"tokenizer.json", "tokenizer.model",
                                                             "tokenizer_config.json"};

Status check_options(const HfStaticExportOptions& options, const HfConfig& config, int64_t max_cache_len) {
  if (options.weight_dtype != DType::kF32 && options.weight_dtype != DType::kF16 &&
      options.weight_dtype != DType::kBF16) {
    return invalid_argument("option 'weight_dtype': expected f32, f16 or bf16, found ",
                            dtype_name(options.weight_dtype));
  }
  if (options.cache_dtype != DType::kF32 && options.cache_dtype != DType::kF16 &&
      options.cache_dtype != DType::kQ8_0) {
    return invalid_argument("option 'cache_dtype': expected f32, f16 or q8_0, found ",
                            dtype_name(options.cache_dtype));
  }
  if (options.cache_dtype == DType::kQ8_0 && options.kv_update != KvUpdateForm::kInPlace) {
    return invalid_argument("option 'cache_dtype' q8_0 needs option 'kv_update' in-place (a returned row would have to "
                            "be quantized by the caller)");
  }
  if (options.cache_dtype == DType::kQ8_0 && config.head_dim % 32 != 0) {
    return invalid_argument("option 'cache_dtype' q8_0 needs a head_dim that is a multiple of 32 (its block), found ",
                            config.head_dim, " in '", config.config_path, "'");
  }
  if (options.prefill_len < 1) {
    return invalid_argument("option 'prefill_len': expected a value >= 1, found ", options.prefill_len);
  }
  if (max_cache_len < 1) {
    return invalid_argument("option 'max_cache_len': expected a value >= 1, found ", max_cache_len);
  }
  if (options.prefill_len > max_cache_len) {
    return invalid_argument("option 'prefill_len' (", options.prefill_len, ") exceeds 'max_cache_len' (", max_cache_len,
                            ")");
  }
  if (!options.embedding_pooling.empty() && options.embedding_pooling != hf_static_v1::kPoolingMean &&
      options.embedding_pooling != hf_static_v1::kPoolingLast) {
    return invalid_argument("option 'embeddings': expected the pooling, mean or last, found '",
                            options.embedding_pooling, "'");
  }
  if (options.no_tokenizer && !options.chat_template_path.empty()) {
    return invalid_argument("option 'chat_template' needs a tokenizer, and option 'no_tokenizer' exports none");
  }
  if (max_cache_len > config.max_position_embeddings) {
    return invalid_argument("option 'max_cache_len' (", max_cache_len,
                            ") exceeds the model's max_position_embeddings (", config.max_position_embeddings, ") in '",
                            config.config_path, "'");
  }
  return ok_status();
}

Result<TokenizerFiles> read_tokenizer_files(const std::string& model_dir) {
  TokenizerFiles out;
  std::vector<std::string> headers;
  std::vector<std::span<const uint8_t>> pieces;
  for (std::string_view name : kTokenizerFiles) {
    const std::string path = (std::filesystem::path(model_dir) / name).string();
    if (!std::filesystem::exists(path)) {
      continue;
    }
    STATICLM_ASSIGN_OR_RETURN(MappedFile file, MappedFile::open(path));
    out.mappings.push_back(std::move(file));
  }
  // Hash "name\0size\0bytes" per file so renaming or moving bytes between files changes it.
  headers.reserve(out.mappings.size());
  for (const MappedFile& file : out.mappings) {
    const std::string name = std::filesystem::path(file.path()).filename().string();
    headers.push_back(name + '\0' + std::to_string(file.size()) + '\0');
    out.files.push_back({name, make_borrowed_source(file.bytes())});
    if (name == "tokenizer.json") {
      out.kind = std::string(hf_static_v1::kTokenizerJson);
    } else if (name == "tokenizer.model" && out.kind == hf_static_v1::kTokenizerNone) {
      out.kind = std::string(hf_static_v1::kTokenizerSentencePiece);
    }
  }
  for (size_t i = 0; i < out.mappings.size(); ++i) {
    pieces.emplace_back(reinterpret_cast<const uint8_t*>(headers[i].data()), headers[i].size());
    pieces.push_back(out.mappings[i].bytes());
  }
  STATICLM_ASSIGN_OR_RETURN(out.hash, sha256_hex(pieces));
  return out;
}

// The chat template to embed: the file the caller names, else the checkpoint's chat_template.jinja.
// Parsed here, so a template with a syntax error fails the export rather than the first chat.
Result<std::optional<EmbeddedFileSpec>> read_chat_template(const std::string& model_dir,
                                                           const std::string& override_path) {
  std::string path = override_path;
  if (path.empty()) {
    path = (std::filesystem::path(model_dir) / "chat_template.jinja").string();
    if (!std::filesystem::exists(path)) {
      return std::optional<EmbeddedFileSpec>();
    }
  }
  auto text = read_text_file(path);
  if (!text.ok()) {
    return text.status().with_context("option 'chat_template'");
  }
  if (!utf8_is_valid(*text)) {
    return invalid_argument("chat template '", path, "': not valid UTF-8");
  }
  auto parsed = jinja::Template::parse(*text);
  if (!parsed.ok()) {
    return parsed.status().with_context(str_cat("chat template '", path, "'"));
  }
  std::vector<uint8_t> bytes(text->begin(), text->end());
  return std::optional<EmbeddedFileSpec>(EmbeddedFileSpec{"chat_template.jinja", make_owned_source(std::move(bytes))});
}

// The format the program's matrices are stored in (ops/weight_format.h): the export's dtype, unless
// the backend has an option `weight_dtype` that converts or quantizes them (the cpu backend's).
std::string stored_weight_format(const HfStaticExportOptions& options, const std::optional<Partitioner>& partitioner) {
  std::string exported(dtype_name(options.weight_dtype));
  if (partitioner) {
    return partitioner->backend().stored_weight_format(partitioner->options()).value_or(exported);
  }
  return exported;
}

// The optional keys that say how the layers attend (docs/hf_static_v1.md), where they differ from
// Llama's: windows, the windowed layers' rope base, the layers without rope, the scores scale, the
// soft-caps.
void add_attention_metadata(const DecoderModel& model, std::vector<MetadataSpec>& m) {
  namespace key = hf_static_v1::key;
  auto add = [&m](std::string_view name, MetadataValue value) { m.push_back({std::string(name), std::move(value)}); };
  std::vector<int64_t> windows;
  std::vector<int64_t> rotates;
  std::optional<double> local_theta;
  for (const LayerAttention& layer : model.attention) {
    windows.push_back(layer.window);
    rotates.push_back(layer.rope ? 1 : 0);
    if (layer.window > 0 && layer.rope && layer.rope->theta != model.params.rope.theta) {
      local_theta = layer.rope->theta;
    }
  }
  if (std::any_of(windows.begin(), windows.end(), [](int64_t window) { return window > 0; })) {
    add(key::kAttentionWindow, windows);
  }
  if (local_theta) {
    add(key::kRopeLocalTheta, *local_theta);
  }
  if (std::find(rotates.begin(), rotates.end(), 0) != rotates.end()) {
    add(key::kRopeLayers, rotates);
  }
  if (!model.attention.empty()) {
    const LayerAttention& first = model.attention.front();
    if (first.scale != attention_default_scale(model.params.head_dim)) {
      add(key::kAttentionScale, first.scale);
    }
    if (first.softcap > 0.0) {
      add(key::kAttnLogitSoftcap, first.softcap);
    }
  }
  if (model.final_softcap > 0.0) {
    add(key::kFinalLogitSoftcap, model.final_softcap);
  }
}

std::vector<MetadataSpec> contract_metadata(const HfConfig& config, const DecoderModel& model,
                                            const HfStaticExportOptions& options, std::string weight_format,
                                            int64_t max_cache_len, const TokenizerFiles& tokenizer) {
  namespace key = hf_static_v1::key;
  const DecoderHyperParams& params = model.params;
  hf_static_v1::Config contract;
  contract.vocab_size = params.vocab_size;
  contract.hidden_size = params.hidden_size;
  contract.embedding_pooling = options.embedding_pooling;
  contract.num_layers = params.num_layers;
  contract.num_kv_heads = params.num_kv_heads;
  contract.head_dim = params.head_dim;
  contract.max_cache_len = max_cache_len;
  contract.prefill_len = options.prefill_len;
  contract.cache_dtype = options.cache_dtype;
  contract.kv_returned = options.kv_update == KvUpdateForm::kReturned;
  contract.logits_last = options.logits == LogitsMode::kLast;
  std::vector<MetadataSpec> m = contract.to_metadata();
  auto add = [&m](std::string_view name, MetadataValue value) { m.push_back({std::string(name), std::move(value)}); };
  add(key::kArchitecture, config.architectures.front());
  add(key::kNumHeads, params.num_heads);
  add(key::kWeightDtype, std::move(weight_format));
  add(key::kBosTokenId, config.bos_token_id.value_or(-1));
  add(key::kEosTokenIds, config.eos_token_ids);
  add(key::kRopeTheta, params.rope.theta);
  add(key::kRopeRotaryDim, params.rope.rotary_dim);
  add(key::kRopeScaling, std::string(rope_scaling_name(params.rope.scaling)));
  add(key::kTokenizerKind, tokenizer.kind);
  add(key::kTokenizerSha256, tokenizer.hash);
  if (params.rope.scaling == RopeScaling::kLinear || params.rope.scaling == RopeScaling::kLlama3) {
    add(key::kRopeFactor, params.rope.factor);
  }
  if (params.rope.scaling == RopeScaling::kLlama3) {
    add(key::kRopeLowFreqFactor, params.rope.low_freq_factor);
    add(key::kRopeHighFreqFactor, params.rope.high_freq_factor);
    add(key::kRopeOriginalMaxPosition, params.rope.original_max_position);
  }
  if (params.rope.scaling == RopeScaling::kLongrope) {
    const int64_t original = config.rope_original_max_position();
    add(key::kRopeOriginalMaxPosition, original);
    add(key::kRopeFactorSet,
        std::string(max_cache_len > original ? hf_static_v1::kRopeFactorsLong : hf_static_v1::kRopeFactorsShort));
    add(key::kRopeAttentionFactor, params.rope_attention_factor);
  }
  add_attention_metadata(model, m);
  const HfGenerationDefaults& g = config.generation;
  if (g.do_sample) add(key::kGenerationDoSample, *g.do_sample);
  if (g.temperature) add(key::kGenerationTemperature, *g.temperature);
  if (g.top_k) add(key::kGenerationTopK, *g.top_k);
  if (g.top_p) add(key::kGenerationTopP, *g.top_p);
  if (g.min_p) add(key::kGenerationMinP, *g.min_p);
  if (g.repetition_penalty) add(key::kGenerationRepetitionPenalty, *g.repetition_penalty);
  return m;
}

}  // namespace

Result<HfStaticBuild> build_hf_static(const std::string& model_dir, const HfStaticExportOptions& options) {
  STATICLM_ASSIGN_OR_RETURN(HfConfig config, HfConfig::load(model_dir, model_family_config_defaults));
  const int64_t max_cache_len = options.max_cache_len > 0
                                    ? options.max_cache_len
                                    : std::min<int64_t>(config.max_position_embeddings, kDefaultMaxCacheLen);
  STATICLM_RETURN_IF_ERROR(check_options(options, config, max_cache_len));
  // Backend options are checked before any weight is read.
  std::optional<Partitioner> partitioner;
  if (options.backend != nullptr) {
    STATICLM_ASSIGN_OR_RETURN(partitioner, Partitioner::from_options(*options.backend, options.backend_options));
  } else if (!options.backend_options.empty() || options.no_fallback) {
    return invalid_argument("backend options and no-fallback need a backend");
  }
  STATICLM_ASSIGN_OR_RETURN(const ModelFamily* family, find_model_family(config));
  HfStaticBuild build;
  // Before any weight is read: a program without a tokenizer fails later in every command that
  // takes text, so it is made only when asked for.
  if (options.no_tokenizer) {
    build.tokenizer = std::make_unique<TokenizerFiles>();
  } else {
    STATICLM_ASSIGN_OR_RETURN(TokenizerFiles tokenizer, read_tokenizer_files(model_dir));
    if (tokenizer.kind == hf_static_v1::kTokenizerNone) {
      return not_found("'", model_dir, "' has no tokenizer: looked for ", kTokenizerFiles[0], " and ",
                       kTokenizerFiles[1], " there; a program without one runs on token ids only (option ",
                       "'no_tokenizer')");
    }
    build.tokenizer = std::make_unique<TokenizerFiles>(std::move(tokenizer));
    STATICLM_ASSIGN_OR_RETURN(std::optional<EmbeddedFileSpec> chat_template,
                              read_chat_template(model_dir, options.chat_template_path));
    if (chat_template) {
      build.tokenizer->files.push_back(std::move(*chat_template));
    }
  }
  STATICLM_ASSIGN_OR_RETURN(SafetensorsCheckpoint checkpoint, SafetensorsCheckpoint::open(model_dir));
  build.checkpoint = std::make_unique<SafetensorsCheckpoint>(std::move(checkpoint));

  auto constants = std::make_shared<ConstantTable>();
  FamilyOptions family_options{options.weight_dtype, max_cache_len};
  STATICLM_ASSIGN_OR_RETURN(DecoderModel model, family->load(config, *build.checkpoint, *constants, family_options));
  if (model.weights.lm_head != kNoConstant && model.weights.lm_head == model.weights.embed_tokens) {
    constants->mark_tied_head(model.weights.lm_head);
  }

  DecoderMethodShape shape{options.prefill_len, max_cache_len, options.cache_dtype, options.kv_update, options.logits};
  auto prefill = family->build(model, constants, shape);
  if (!prefill.ok()) {
    return prefill.status().with_context(str_cat("'", model_dir, "': building method '", hf_static_v1::kPrefill, "'"));
  }
  shape.seq_len = 1;
  auto decode = family->build(model, constants, shape);
  if (!decode.ok()) {
    return decode.status().with_context(str_cat("'", model_dir, "': building method '", hf_static_v1::kDecode, "'"));
  }

  std::vector<std::pair<std::string_view, Graph*>> graphs = {{hf_static_v1::kPrefill, prefill->get()},
                                                             {hf_static_v1::kDecode, decode->get()}};
  std::unique_ptr<Graph> embeddings;
  if (!options.embedding_pooling.empty()) {
    shape.seq_len = options.prefill_len;
    shape.hidden_states = true;
    auto built = family->build(model, constants, shape);
    if (!built.ok()) {
      return built.status().with_context(
          str_cat("'", model_dir, "': building method '", hf_static_v1::kEmbeddings, "'"));
    }
    embeddings = std::move(*built);
    graphs.emplace_back(hf_static_v1::kEmbeddings, embeddings.get());
  }

  LowerOptions lower;
  lower.metadata = contract_metadata(config, model, options, stored_weight_format(options, partitioner), max_cache_len,
                                     *build.tokenizer);
  lower.files = build.tokenizer->files;
  if (partitioner) {
    std::vector<PartitionMethod> methods;
    for (const auto& [name, graph] : graphs) {
      methods.push_back({std::string(name), graph});
    }
    PartitionRunOptions run;
    run.no_fallback = options.no_fallback;
    auto partitioned = partitioner->run(methods, lower, run);
    if (!partitioned.ok()) {
      return partitioned.status().with_context(str_cat("'", model_dir, "'"));
    }
    build.spec = std::move(partitioned->spec);
    build.summary.placement = std::move(partitioned->report);
    const auto entries = partitioner->options().entries();
    build.summary.backend_settings.assign(entries.begin(), entries.end());
  } else {
    std::vector<MethodGraph> methods;
    for (const auto& [name, graph] : graphs) {
      methods.push_back({std::string(name), graph});
    }
    STATICLM_ASSIGN_OR_RETURN(build.spec, lower_to_program(methods, lower));
  }

  HfStaticExportSummary& summary = build.summary;
  summary.architecture = config.architectures.front();
  for (const auto& [name, graph] : graphs) {
    summary.methods.emplace_back(name);
  }
  summary.prefill_len = options.prefill_len;
  summary.max_cache_len = max_cache_len;
  summary.constant_count = build.spec.constants.size();
  summary.named_data_count = build.spec.named_data.size();
  for (const EmbeddedFileSpec& file : build.tokenizer->files) {
    summary.embedded_files.push_back(file.name);
  }
  return build;
}

Result<HfStaticExportSummary> export_hf_static(const std::string& model_dir, const std::string& output_path,
                                               const HfStaticExportOptions& options) {
  STATICLM_ASSIGN_OR_RETURN(HfStaticBuild build, build_hf_static(model_dir, options));
  WriteOptions write_options;
  write_options.on_progress = options.on_progress;
  STATICLM_ASSIGN_OR_RETURN(WriteSummary written, write_program(build.spec, output_path, write_options));
  build.summary.file_bytes = written.file_bytes;
  build.summary.constant_bytes = written.constant_bytes;
  build.summary.named_data_bytes = written.named_data_bytes;
  return build.summary;
}

}  // namespace staticlm
