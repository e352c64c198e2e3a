// SPDX-License-Identifier: Apache-2.0
#include "staticlm/exporter/hf_config.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <limits>
#include <utility>

#include "staticlm/core/mapped_file.h"
#include "staticlm/json/strict_json.h"

namespace staticlm {
namespace {

using nlohmann::json;

// Model dimensions above this are refused, so that builders can multiply a few of them in int64.
constexpr int64_t kMaxDimension = std::numeric_limits<int32_t>::max();

bool is_positive_finite(double value) {
  return std::isfinite(value) && value > 0.0;
}
bool is_non_negative_finite(double value) {
  return std::isfinite(value) && value >= 0.0;
}
bool is_unit_interval(double value) {
  return std::isfinite(value) && value >= 0.0 && value <= 1.0;
}
bool is_rotary_fraction(double value) {
  return std::isfinite(value) && value > 0.0 && value <= 1.0;
}

// Reads typed values out of one JSON object, naming the file and key in every failure. A key
// whose value is null reads as absent, as transformers treats it.
class FieldReader {
 public:
  FieldReader(const json& object, std::string file, std::string key_prefix = "")
      : object_(object), file_(std::move(file)), key_prefix_(std::move(key_prefix)) {}

  const std::string& file() const { return file_; }

  const json* value(std::string_view key) const {
    auto it = object_.find(key);
    if (it == object_.end() || it->is_null()) {
      return nullptr;
    }
    return &*it;
  }

  Status wrong(std::string_view key, std::string_view expected, const json& found) const {
    return invalid_argument("'", file_, "': key '", key_prefix_, key, "': expected ", expected, ", found ",
                            json_preview(found));
  }

  Status missing(std::string_view key, std::string_view expected) const {
    return invalid_argument("'", file_, "': missing required key '", key_prefix_, key, "' (expected ", expected, ")");
  }

  Result<std::optional<int64_t>> optional_int(std::string_view key, int64_t min_value, int64_t max_value,
                                              std::string_view expected) const {
    const json* found = value(key);
    if (found == nullptr) {
      return std::optional<int64_t>();
    }
    std::optional<int64_t> number;
    if (found->is_number_unsigned()) {
      const uint64_t raw = found->get<uint64_t>();
      if (raw <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        number = static_cast<int64_t>(raw);
      }
    } else if (found->is_number_integer()) {
      number = found->get<int64_t>();
    }
    if (!number || *number < min_value || *number > max_value) {
      return wrong(key, expected, *found);
    }
    return number;
  }

  Result<std::optional<int64_t>> optional_dimension(std::string_view key) const {
    return optional_int(key, 1, kMaxDimension, "a positive integer (at most 2147483647)");
  }

  Result<int64_t> required_dimension(std::string_view key) const {
    STATICLM_ASSIGN_OR_RETURN(std::optional<int64_t> number, optional_dimension(key));
    if (!number) {
      return missing(key, "a positive integer");
    }
    return *number;
  }

  Result<std::optional<double>> optional_number(std::string_view key, bool (*in_range)(double),
                                                std::string_view expected) const {
    const json* found = value(key);
    if (found == nullptr) {
      return std::optional<double>();
    }
    if (!found->is_number() || !in_range(found->get<double>())) {
      return wrong(key, expected, *found);
    }
    return std::optional<double>(found->get<double>());
  }

  Result<double> required_number(std::string_view key, bool (*in_range)(double), std::string_view expected) const {
    STATICLM_ASSIGN_OR_RETURN(std::optional<double> number, optional_number(key, in_range, expected));
    if (!number) {
      return missing(key, expected);
    }
    return *number;
  }

  Result<std::optional<bool>> optional_bool(std::string_view key) const {
    const json* found = value(key);
    if (found == nullptr) {
      return std::optional<bool>();
    }
    if (!found->is_boolean()) {
      return wrong(key, "true or false", *found);
    }
    return std::optional<bool>(found->get<bool>());
  }

  Result<std::optional<std::string>> optional_string(std::string_view key) const {
    const json* found = value(key);
    if (found == nullptr) {
      return std::optional<std::string>();
    }
    if (!found->is_string()) {
      return wrong(key, "a string", *found);
    }
    return std::optional<std::string>(found->get<std::string>());
  }

  Result<std::optional<int64_t>> optional_token_id(std::string_view key) const {
    return optional_int(key, 0, std::numeric_limits<int64_t>::max(), "a non-negative token id");
  }

  // A token id or an array of them (eos_token_id may be either).
  Result<std::vector<int64_t>> token_ids(std::string_view key) const {
    const json* found = value(key);
    std::vector<int64_t> ids;
    if (found == nullptr) {
      return ids;
    }
    if (!found->is_array()) {
      STATICLM_ASSIGN_OR_RETURN(std::optional<int64_t> id, optional_token_id(key));
      ids.push_back(*id);
      return ids;
    }
    for (const json& element : *found) {
      if (!element.is_number_integer() || (!element.is_number_unsigned() && element.get<int64_t>() < 0) ||
          (element.is_number_unsigned() &&
           element.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))) {
        return wrong(key, "a non-negative token id or an array of them", *found);
      }
      ids.push_back(element.get<int64_t>());
    }
    return ids;
  }

 private:
  const json& object_;
  std::string file_;
  std::string key_prefix_;
};

// A non-empty array of numbers > 0 (longrope's factor lists); empty when the key is absent.
Result<std::vector<double>> positive_numbers(const FieldReader& fields, std::string_view key) {
  std::vector<double> numbers;
  const json* found = fields.value(key);
  if (found == nullptr) {
    return numbers;
  }
  constexpr std::string_view kExpected = "a non-empty array of numbers > 0";
  if (!found->is_array() || found->empty()) {
    return fields.wrong(key, kExpected, *found);
  }
  for (const json& element : *found) {
    if (!element.is_number() || !is_positive_finite(element.get<double>())) {
      return fields.wrong(key, kExpected, *found);
    }
    numbers.push_back(element.get<double>());
  }
  return numbers;
}

// longrope (Phi-3; "su" before transformers 4.44): the short and long factor lists, required, and
// what transformers reads beside them where the config has it.
Status read_longrope(const FieldReader& fields, HfRopeScaling& out) {
  out.type = RopeScaling::kLongrope;
  for (auto [key, list] : {std::pair{"short_factor", &out.short_factor}, std::pair{"long_factor", &out.long_factor}}) {
    STATICLM_ASSIGN_OR_RETURN(*list, positive_numbers(fields, key));
    if (list->empty()) {
      return fields.missing(key, "a non-empty array of numbers > 0");
    }
  }
  STATICLM_ASSIGN_OR_RETURN(out.attention_factor,
                            fields.optional_number("attention_factor", is_positive_finite, "a number > 0"));
  STATICLM_ASSIGN_OR_RETURN(std::optional<double> factor,
                            fields.optional_number("factor", is_positive_finite, "a number > 0"));
  out.factor = factor.value_or(1.0);
  STATICLM_ASSIGN_OR_RETURN(std::optional<int64_t> original,
                            fields.optional_dimension("original_max_position_embeddings"));
  out.original_max_position_embeddings = original.value_or(0);
  return ok_status();
}

void append_new_ids(std::vector<int64_t>& ids, const std::vector<int64_t>& more) {
  for (int64_t id : more) {
    if (std::find(ids.begin(), ids.end(), id) == ids.end()) {
      ids.push_back(id);
    }
  }
}

Status read_rope_scaling(const json& scaling, std::string_view key, const std::string& file, HfRopeScaling& out) {
  if (!scaling.is_object()) {
    return invalid_argument("'", file, "': key '", key, "': expected an object or null, found ", json_preview(scaling));
  }
  const FieldReader fields(scaling, file, str_cat(key, "."));
  STATICLM_ASSIGN_OR_RETURN(std::optional<std::string> type, fields.optional_string("rope_type"));
  if (!type) {
    // Configs written before transformers 4.43 name it "type".
    STATICLM_ASSIGN_OR_RETURN(type, fields.optional_string("type"));
  }
  if (!type) {
    return invalid_argument("'", file, "': key '", key, "' has neither \"rope_type\" nor \"type\"");
  }
  out = HfRopeScaling();
  if (*type == "default") {
    return ok_status();
  }
  if (*type == "longrope" || *type == "su") {
    return read_longrope(fields, out);
  }
  if (*type != "linear" && *type != "llama3") {
    return unimplemented("'", file, "': ", key, " type '", *type,
                         "' is not supported (supported: none, linear, llama3, longrope)");
  }
  STATICLM_ASSIGN_OR_RETURN(out.factor, fields.required_number("factor", is_positive_finite, "a number > 0"));
  if (*type == "linear") {
    out.type = RopeScaling::kLinear;
    return ok_status();
  }
  out.type = RopeScaling::kLlama3;
  STATICLM_ASSIGN_OR_RETURN(out.low_freq_factor,
                            fields.required_number("low_freq_factor", is_positive_finite, "a number > 0"));
  STATICLM_ASSIGN_OR_RETURN(out.high_freq_factor,
                            fields.required_number("high_freq_factor", is_positive_finite, "a number > 0"));
  STATICLM_ASSIGN_OR_RETURN(std::optional<int64_t> original,
                            fields.optional_dimension("original_max_position_embeddings"));
  if (!original) {
    return fields.missing("original_max_position_embeddings", "a positive integer");
  }
  out.original_max_position_embeddings = *original;
  if (!(out.high_freq_factor > out.low_freq_factor)) {
    return invalid_argument("'", file, "': ", key, ": llama3 scaling needs low_freq_factor < high_freq_factor, found ",
                            out.low_freq_factor, " and ", out.high_freq_factor);
  }
  return ok_status();
}

// transformers 5 keys Gemma 3's rope parameters by layer type: the sliding layers' rotate with
// their own base and no scaling.
Status read_sliding_rope(const json& sliding, const std::string& file, HfConfig& out) {
  constexpr std::string_view kKey = "rope_parameters.sliding_attention";
  HfRopeScaling scaling;
  STATICLM_RETURN_IF_ERROR(read_rope_scaling(sliding, kKey, file, scaling));
  if (scaling.type != RopeScaling::kNone) {
    return unimplemented("'", file, "': ", kKey, " type '", rope_scaling_name(scaling.type),
                         "' is not supported (supported: default: sliding layers rotate unscaled)");
  }
  const FieldReader fields(sliding, file, str_cat(kKey, "."));
  STATICLM_ASSIGN_OR_RETURN(out.rope_local_base_freq,
                            fields.optional_number("rope_theta", is_positive_finite, "a number > 0"));
  return ok_status();
}

Status read_rope(const FieldReader& config, HfConfig& out) {
  // transformers >= 5 moves theta and scaling into one "rope_parameters" object, or one per layer
  // type.
  const json* parameters = config.value("rope_parameters");
  if (parameters != nullptr && !parameters->is_object()) {
    return config.wrong("rope_parameters", "an object or null", *parameters);
  }
  std::string parameters_key = "rope_parameters";
  if (parameters != nullptr && parameters->contains(kFullAttention)) {
    const json& sliding = parameters->contains(kSlidingAttention) ? parameters->at(kSlidingAttention) : json();
    if (sliding.is_object()) {
      STATICLM_RETURN_IF_ERROR(read_sliding_rope(sliding, config.file(), out));
    }
    parameters = &parameters->at(kFullAttention);
    parameters_key = str_cat("rope_parameters.", kFullAttention);
    if (!parameters->is_object()) {
      return config.wrong(parameters_key, "an object", *parameters);
    }
  }
  STATICLM_ASSIGN_OR_RETURN(std::optional<double> theta,
                            config.optional_number("rope_theta", is_positive_finite, "a number > 0"));
  if (!theta && parameters != nullptr) {
    const FieldReader nested(*parameters, config.file(), parameters_key + ".");
    STATICLM_ASSIGN_OR_RETURN(theta, nested.optional_number("rope_theta", is_positive_finite, "a number > 0"));
  }
  out.rope_theta = theta.value_or(10000.0);
  if (const json* scaling = config.value("rope_scaling")) {
    return read_rope_scaling(*scaling, "rope_scaling", config.file(), out.rope_scaling);
  }
  if (parameters != nullptr) {
    return read_rope_scaling(*parameters, parameters_key, config.file(), out.rope_scaling);
  }
  return ok_status();
}

Status read_architecture(const FieldReader& config, HfConfig& out) {
  const json* architectures = config.value("architectures");
  if (architectures == nullptr) {
    return config.missing("architectures", "a non-empty array of class names");
  }
  if (!architectures->is_array() || architectures->empty()) {
    return config.wrong("architectures", "a non-empty array of class names", *architectures);
  }
  for (const json& name : *architectures) {
    if (!name.is_string()) {
      return config.wrong("architectures", "a non-empty array of class names", *architectures);
    }
    out.architectures.push_back(name.get<std::string>());
  }
  STATICLM_ASSIGN_OR_RETURN(std::optional<std::string> model_type, config.optional_string("model_type"));
  out.model_type = model_type.value_or("");
  return ok_status();
}

Status read_dimensions(const FieldReader& config, HfConfig& out) {
  STATICLM_ASSIGN_OR_RETURN(out.vocab_size, config.required_dimension("vocab_size"));
  STATICLM_ASSIGN_OR_RETURN(out.hidden_size, config.required_dimension("hidden_size"));
  STATICLM_ASSIGN_OR_RETURN(out.intermediate_size, config.required_dimension("intermediate_size"));
  STATICLM_ASSIGN_OR_RETURN(out.num_hidden_layers, config.required_dimension("num_hidden_layers"));
  STATICLM_ASSIGN_OR_RETURN(out.num_attention_heads, config.required_dimension("num_attention_heads"));
  STATICLM_ASSIGN_OR_RETURN(std::optional<int64_t> kv_heads, config.optional_dimension("num_key_value_heads"));
  out.num_key_value_heads = kv_heads.value_or(out.num_attention_heads);
  if (out.num_attention_heads % out.num_key_value_heads != 0) {
    return invalid_argument("'", config.file(), "': key 'num_key_value_heads': ", out.num_key_value_heads,
                            " does not divide num_attention_heads ", out.num_attention_heads);
  }
  STATICLM_ASSIGN_OR_RETURN(std::optional<int64_t> head_dim, config.optional_dimension("head_dim"));
  if (head_dim) {
    out.head_dim = *head_dim;
  } else if (out.hidden_size % out.num_attention_heads != 0) {
    return invalid_argument("'", config.file(), "': key 'hidden_size': ", out.hidden_size,
                            " is not divisible by num_attention_heads ", out.num_attention_heads,
                            ", and there is no head_dim to say how wide a head is");
  } else {
    out.head_dim = out.hidden_size / out.num_attention_heads;
  }
  STATICLM_ASSIGN_OR_RETURN(std::optional<int64_t> max_positions, config.optional_dimension("max_position_embeddings"));
  out.max_position_embeddings = max_positions.value_or(2048);
  STATICLM_ASSIGN_OR_RETURN(out.original_max_position_embeddings,
                            config.optional_dimension("original_max_position_embeddings"));
  STATICLM_ASSIGN_OR_RETURN(out.sliding_window, config.optional_dimension("sliding_window"));
  STATICLM_ASSIGN_OR_RETURN(out.use_sliding_window, config.optional_bool("use_sliding_window"));
  STATICLM_ASSIGN_OR_RETURN(out.max_window_layers,
                            config.optional_int("max_window_layers", 0, kMaxDimension, "a non-negative integer"));
  return ok_status();
}

Status read_options(const FieldReader& config, HfConfig& out) {
  STATICLM_ASSIGN_OR_RETURN(std::optional<double> eps,
                            config.optional_number("rms_norm_eps", is_positive_finite, "a number > 0"));
  out.rms_norm_eps = eps.value_or(1e-6);
  STATICLM_ASSIGN_OR_RETURN(std::optional<double> rotary_fraction,
                            config.optional_number("partial_rotary_factor", is_rotary_fraction, "a number in (0, 1]"));
  const json* parameters = config.value("rope_parameters");
  if (!rotary_fraction && parameters != nullptr && parameters->is_object()) {
    // transformers 5 keeps it beside the rope's other parameters.
    const FieldReader nested(*parameters, config.file(), "rope_parameters.");
    STATICLM_ASSIGN_OR_RETURN(
        rotary_fraction, nested.optional_number("partial_rotary_factor", is_rotary_fraction, "a number in (0, 1]"));
  }
  out.partial_rotary_factor = rotary_fraction.value_or(1.0);
  STATICLM_ASSIGN_OR_RETURN(std::optional<bool> tie, config.optional_bool("tie_word_embeddings"));
  out.tie_word_embeddings = tie.value_or(false);
  STATICLM_ASSIGN_OR_RETURN(std::optional<bool> attention_bias, config.optional_bool("attention_bias"));
  out.attention_bias = attention_bias.value_or(false);
  STATICLM_ASSIGN_OR_RETURN(std::optional<bool> mlp_bias, config.optional_bool("mlp_bias"));
  out.mlp_bias = mlp_bias.value_or(false);
  STATICLM_ASSIGN_OR_RETURN(std::optional<std::string> act, config.optional_string("hidden_act"));
  out.hidden_act = act.value_or("silu");
  STATICLM_ASSIGN_OR_RETURN(out.torch_dtype, config.optional_string("torch_dtype"));
  if (!out.torch_dtype) {
    STATICLM_ASSIGN_OR_RETURN(out.torch_dtype, config.optional_string("dtype"));  // transformers >= 5
  }
  return ok_status();
}

Status read_layer_types(const FieldReader& config, HfConfig& out) {
  const json* types = config.value("layer_types");
  if (types == nullptr) {
    return ok_status();
  }
  constexpr std::string_view kExpected = "an array of layer type names";
  if (!types->is_array()) {
    return config.wrong("layer_types", kExpected, *types);
  }
  for (const json& type : *types) {
    if (!type.is_string()) {
      return config.wrong("layer_types", kExpected, *types);
    }
    out.layer_types.push_back(type.get<std::string>());
  }
  if (static_cast<int64_t>(out.layer_types.size()) != out.num_hidden_layers) {
    return invalid_argument("'", config.file(), "': key 'layer_types': expected one entry per layer (",
                            out.num_hidden_layers, "), found ", out.layer_types.size());
  }
  return ok_status();
}

// The keys of Gemma's configs (and of others that adopt them).
Status read_gemma_fields(const FieldReader& config, HfConfig& out) {
  STATICLM_ASSIGN_OR_RETURN(out.hidden_activation, config.optional_string("hidden_activation"));
  STATICLM_ASSIGN_OR_RETURN(out.query_pre_attn_scalar,
                            config.optional_number("query_pre_attn_scalar", is_positive_finite, "a number > 0"));
  STATICLM_ASSIGN_OR_RETURN(out.attn_logit_softcapping,
                            config.optional_number("attn_logit_softcapping", is_positive_finite, "a number > 0"));
  STATICLM_ASSIGN_OR_RETURN(out.final_logit_softcapping,
                            config.optional_number("final_logit_softcapping", is_positive_finite, "a number > 0"));
  STATICLM_ASSIGN_OR_RETURN(std::optional<double> local_base,
                            config.optional_number("rope_local_base_freq", is_positive_finite, "a number > 0"));
  if (local_base) {
    out.rope_local_base_freq = local_base;
  }
  if (out.rope_local_base_freq && !(*out.rope_local_base_freq > 1.0)) {
    return invalid_argument("'", config.file(), "': key 'rope_local_base_freq': expected a number > 1, found ",
                            *out.rope_local_base_freq);
  }
  STATICLM_RETURN_IF_ERROR(read_layer_types(config, out));
  // transformers >= 4.53 writes it with a leading underscore.
  STATICLM_ASSIGN_OR_RETURN(out.sliding_window_pattern, config.optional_dimension("sliding_window_pattern"));
  if (!out.sliding_window_pattern) {
    STATICLM_ASSIGN_OR_RETURN(out.sliding_window_pattern, config.optional_dimension("_sliding_window_pattern"));
  }
  STATICLM_ASSIGN_OR_RETURN(std::optional<bool> bidirectional, config.optional_bool("use_bidirectional_attention"));
  out.use_bidirectional_attention = bidirectional.value_or(false);
  return ok_status();
}

// SmolLM3's per-layer rope switch and Granite's multipliers.
Status read_layer_scalings(const FieldReader& config, HfConfig& out) {
  if (const json* layers = config.value("no_rope_layers")) {
    constexpr std::string_view kExpected = "an array of 0 and 1, one per layer";
    if (!layers->is_array()) {
      return config.wrong("no_rope_layers", kExpected, *layers);
    }
    for (const json& flag : *layers) {
      if (!flag.is_number_integer() || (flag.get<int64_t>() != 0 && flag.get<int64_t>() != 1)) {
        return config.wrong("no_rope_layers", kExpected, *layers);
      }
      out.no_rope_layers.push_back(flag.get<int64_t>());
    }
    if (static_cast<int64_t>(out.no_rope_layers.size()) < out.num_hidden_layers) {
      return invalid_argument("'", config.file(), "': key 'no_rope_layers': expected an entry for each of the ",
                              out.num_hidden_layers, " layers, found ", out.no_rope_layers.size());
    }
  }
  STATICLM_ASSIGN_OR_RETURN(out.no_rope_layer_interval, config.optional_dimension("no_rope_layer_interval"));
  for (auto [key, field] :
       {std::pair{"embedding_multiplier", &out.embedding_multiplier},
        std::pair{"attention_multiplier", &out.attention_multiplier},
        std::pair{"residual_multiplier", &out.residual_multiplier}, std::pair{"logits_scaling", &out.logits_scaling}}) {
    STATICLM_ASSIGN_OR_RETURN(*field, config.optional_number(key, is_positive_finite, "a number > 0"));
  }
  return ok_status();
}

// pad_token_id: old conversions write -1 for "none".
Result<std::optional<int64_t>> read_pad_token_id(const FieldReader& fields) {
  STATICLM_ASSIGN_OR_RETURN(std::optional<int64_t> pad,
                            fields.optional_int("pad_token_id", std::numeric_limits<int64_t>::min(),
                                                std::numeric_limits<int64_t>::max(), "an integer token id"));
  if (pad && *pad < 0) {
    pad.reset();
  }
  return pad;
}

Status read_token_ids(const FieldReader& config, HfConfig& out) {
  STATICLM_ASSIGN_OR_RETURN(out.bos_token_id, config.optional_token_id("bos_token_id"));
  STATICLM_ASSIGN_OR_RETURN(out.eos_token_ids, config.token_ids("eos_token_id"));
  STATICLM_ASSIGN_OR_RETURN(out.pad_token_id, read_pad_token_id(config));
  return ok_status();
}

Status read_generation_config(const std::string& path, HfConfig& out) {
  Result<std::string> text = read_text_file(path);
  if (!text.ok()) {
    return text.status().code() == StatusCode::kNotFound ? ok_status() : text.status();
  }
  STATICLM_ASSIGN_OR_RETURN(json document, parse_json_object(*text, path));
  out.has_generation_config = true;
  const FieldReader fields(document, path);
  STATICLM_ASSIGN_OR_RETURN(std::vector<int64_t> eos, fields.token_ids("eos_token_id"));
  append_new_ids(out.eos_token_ids, eos);
  STATICLM_ASSIGN_OR_RETURN(std::optional<int64_t> bos, fields.optional_token_id("bos_token_id"));
  if (bos) {
    out.bos_token_id = bos;
  }
  STATICLM_ASSIGN_OR_RETURN(std::optional<int64_t> pad, read_pad_token_id(fields));
  if (pad) {
    out.pad_token_id = pad;
  }
  HfGenerationDefaults& generation = out.generation;
  STATICLM_ASSIGN_OR_RETURN(generation.do_sample, fields.optional_bool("do_sample"));
  STATICLM_ASSIGN_OR_RETURN(generation.temperature,
                            fields.optional_number("temperature", is_non_negative_finite, "a number >= 0"));
  STATICLM_ASSIGN_OR_RETURN(
      generation.top_k, fields.optional_int("top_k", 0, std::numeric_limits<int64_t>::max(), "a non-negative integer"));
  STATICLM_ASSIGN_OR_RETURN(generation.top_p, fields.optional_number("top_p", is_unit_interval, "a number in [0, 1]"));
  STATICLM_ASSIGN_OR_RETURN(generation.min_p, fields.optional_number("min_p", is_unit_interval, "a number in [0, 1]"));
  STATICLM_ASSIGN_OR_RETURN(generation.repetition_penalty,
                            fields.optional_number("repetition_penalty", is_positive_finite, "a number > 0"));
  return ok_status();
}

std::string path_in(const std::string& dir, std::string_view file_name) {
  return (std::filesystem::path(dir) / std::filesystem::path(file_name)).string();
}

// Keys a multimodal checkpoint may keep at its top level only.
constexpr std::array<std::string_view, 6> kTopLevelKeys = {"bos_token_id", "eos_token_id", "pad_token_id",
                                                           "torch_dtype",  "dtype",        "tie_word_embeddings"};

// The object the model's keys are read from: `document`, or its text_config with the top level's
// token ids and dtype under it; `defaults` under both.
Result<json> model_fields(const json& document, const json& defaults, const std::string& file, bool& from_text) {
  json fields = defaults;
  const auto text_config = document.find("text_config");
  from_text = text_config != document.end() && !text_config->is_null();
  if (!from_text) {
    for (const auto& [key, value] : document.items()) {
      fields[key] = value;
    }
    return fields;
  }
  if (!text_config->is_object()) {
    return invalid_argument("'", file, "': key 'text_config': expected an object or null, found ",
                            json_preview(*text_config));
  }
  for (std::string_view key : kTopLevelKeys) {
    if (const auto found = document.find(key); found != document.end()) {
      fields[std::string(key)] = *found;
    }
  }
  for (const auto& [key, value] : text_config->items()) {
    fields[key] = value;
  }
  return fields;
}

}  // namespace

Result<HfConfig> HfConfig::load(const std::string& model_dir, HfConfigDefaults defaults) {
  HfConfig config;
  config.model_dir = model_dir;
  config.config_path = path_in(model_dir, "config.json");
  STATICLM_ASSIGN_OR_RETURN(std::string text, read_text_file(config.config_path));
  STATICLM_ASSIGN_OR_RETURN(json document, parse_json_object(text, config.config_path));
  STATICLM_RETURN_IF_ERROR(read_architecture(FieldReader(document, config.config_path), config));
  json default_values = json::object();
  if (const std::string_view default_text = defaults != nullptr ? defaults(config.architectures) : "";
      !default_text.empty()) {
    STATICLM_ASSIGN_OR_RETURN(default_values, parse_json_object(default_text, "the family's config defaults"));
  }
  STATICLM_ASSIGN_OR_RETURN(json model,
                            model_fields(document, default_values, config.config_path, config.from_text_config));
  const std::string prefix = config.from_text_config ? "text_config." : "";
  const FieldReader fields(model, config.config_path, prefix);
  STATICLM_RETURN_IF_ERROR(read_dimensions(fields, config));
  STATICLM_RETURN_IF_ERROR(read_rope(fields, config));
  STATICLM_RETURN_IF_ERROR(read_options(fields, config));
  STATICLM_RETURN_IF_ERROR(read_gemma_fields(fields, config));
  STATICLM_RETURN_IF_ERROR(read_layer_scalings(fields, config));
  STATICLM_RETURN_IF_ERROR(read_token_ids(fields, config));
  STATICLM_RETURN_IF_ERROR(read_generation_config(path_in(model_dir, "generation_config.json"), config));
  STATICLM_RETURN_IF_ERROR(config.rope_params(config.max_position_embeddings).status());
  return config;
}

Result<RopeParams> HfConfig::rope_params(int64_t max_sequence_len) const {
  RopeParams params;
  if (!std::isfinite(rope_theta) || !(rope_theta > 1.0)) {
    return invalid_argument("'", config_path, "': key 'rope_theta': expected a finite number > 1, found ", rope_theta);
  }
  params.theta = rope_theta;
  if (!is_rotary_fraction(partial_rotary_factor)) {
    return invalid_argument("'", config_path, "': key 'partial_rotary_factor': expected a number in (0, 1], found ",
                            partial_rotary_factor);
  }
  // transformers truncates: int(head_dim * partial_rotary_factor).
  params.rotary_dim = static_cast<int64_t>(static_cast<double>(head_dim) * partial_rotary_factor);
  if (params.rotary_dim < 2 || params.rotary_dim % 2 != 0 || params.rotary_dim > head_dim) {
    return invalid_argument("'", config_path, "': head_dim ", head_dim, " x partial_rotary_factor ",
                            partial_rotary_factor, " gives a rotary width of ", params.rotary_dim,
                            ", expected an even number >= 2");
  }
  params.scaling = rope_scaling.type;
  if (rope_scaling.type != RopeScaling::kNone) {
    if (!is_positive_finite(rope_scaling.factor)) {
      return invalid_argument("'", config_path, "': key 'rope_scaling.factor': expected a number > 0, found ",
                              rope_scaling.factor);
    }
    params.factor = rope_scaling.factor;
  }
  if (rope_scaling.type == RopeScaling::kLlama3) {
    if (!is_positive_finite(rope_scaling.low_freq_factor) ||
        !(rope_scaling.high_freq_factor > rope_scaling.low_freq_factor) ||
        !std::isfinite(rope_scaling.high_freq_factor) || rope_scaling.original_max_position_embeddings <= 0) {
      return invalid_argument("'", config_path,
                              "': llama3 rope scaling needs 0 < low_freq_factor < high_freq_factor and "
                              "original_max_position_embeddings > 0, found ",
                              rope_scaling.low_freq_factor, ", ", rope_scaling.high_freq_factor, " and ",
                              rope_scaling.original_max_position_embeddings);
    }
    params.low_freq_factor = rope_scaling.low_freq_factor;
    params.high_freq_factor = rope_scaling.high_freq_factor;
    params.original_max_position = rope_scaling.original_max_position_embeddings;
  }
  if (rope_scaling.type == RopeScaling::kLongrope) {
    const auto pairs = static_cast<size_t>(params.rotary_dim / 2);
    for (auto [key, list] :
         {std::pair{"short_factor", &rope_scaling.short_factor}, std::pair{"long_factor", &rope_scaling.long_factor}}) {
      if (list->size() != pairs) {
        return invalid_argument("'", config_path, "': key 'rope_scaling.", key, "': expected ", pairs,
                                " factors (head_dim ", head_dim, " x partial_rotary_factor ", partial_rotary_factor,
                                " / 2), found ", list->size());
      }
    }
    params.frequency_factors =
        max_sequence_len > rope_original_max_position() ? rope_scaling.long_factor : rope_scaling.short_factor;
  }
  return params;
}

int64_t HfConfig::rope_original_max_position() const {
  if (rope_scaling.type != RopeScaling::kLongrope) {
    return 0;
  }
  if (original_max_position_embeddings) {
    return *original_max_position_embeddings;
  }
  return rope_scaling.original_max_position_embeddings > 0 ? rope_scaling.original_max_position_embeddings
                                                           : max_position_embeddings;
}

double HfConfig::rope_attention_factor() const {
  if (rope_scaling.type != RopeScaling::kLongrope) {
    return 1.0;
  }
  if (rope_scaling.attention_factor) {
    return *rope_scaling.attention_factor;
  }
  // transformers' _compute_longrope_parameters: with an original length, the extension is
  // max_position_embeddings / original, whatever `factor` says.
  const int64_t original = rope_original_max_position();
  const bool has_original =
      original_max_position_embeddings.has_value() || rope_scaling.original_max_position_embeddings > 0;
  const double extension =
      has_original ? static_cast<double>(max_position_embeddings) / static_cast<double>(original) : rope_scaling.factor;
  if (extension <= 1.0 || original <= 1) {
    return 1.0;
  }
  return std::sqrt(1.0 + std::log(extension) / std::log(static_cast<double>(original)));
}

std::optional<int64_t> HfConfig::effective_sliding_window() const {
  if (use_sliding_window.has_value() && !*use_sliding_window) {
    return std::nullopt;
  }
  return sliding_window;
}

}  // namespace staticlm
