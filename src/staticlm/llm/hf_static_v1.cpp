#include "staticlm/llm/hf_static_v1.h"

#include <algorithm>
#include <cstring>
#include <map>

#include "staticlm/format/metadata.h"

namespace staticlm {
namespace {

constexpr std::string_view kPrefill = "prefill";
constexpr std::string_view kDecode = "decode";

std::string tensor_name(std::string_view stem, int64_t layer) {
  return str_cat(stem, layer);
}

Result<int64_t> positive_int(const ProgramFile& file, std::string_view key) {
  STATICLM_ASSIGN_OR_RETURN(int64_t value, metadata_int(file, key));
  if (value <= 0) {
    return invalid_argument("metadata '", key, "': expected a positive integer, found ", value);
  }
  return value;
}

Result<std::string> one_of(const ProgramFile& file, std::string_view key,
                           std::initializer_list<std::string_view> allowed) {
  STATICLM_ASSIGN_OR_RETURN(std::string value, metadata_string(file, key));
  for (std::string_view candidate : allowed) {
    if (value == candidate) {
      return value;
    }
  }
  std::vector<std::string> names(allowed.begin(), allowed.end());
  return invalid_argument("metadata '", key, "': expected one of ", join(names, ", "), ", found '", value, "'");
}

// What a method's inputs or outputs must be, by name.
struct Expected {
  DType dtype;
  Shape shape;
  bool is_mutable;
};

Status check_io(std::string_view method, std::string_view kind, const std::vector<IoTensorInfo>& actual,
                const std::map<std::string, Expected>& expected) {
  for (const IoTensorInfo& info : actual) {
    auto it = expected.find(info.name);
    if (it == expected.end()) {
      return invalid_argument("method '", method, "': unexpected ", kind, " '", info.name,
                              "' (hf_static v1 does not define it)");
    }
    const Expected& want = it->second;
    if (info.dtype != want.dtype || info.shape != want.shape) {
      return invalid_argument("method '", method, "' ", kind, " '", info.name, "': expected ", dtype_name(want.dtype),
                              shape_string(want.shape), ", found ", dtype_name(info.dtype), shape_string(info.shape));
    }
    if (kind == "input" && info.is_mutable != want.is_mutable) {
      return invalid_argument("method '", method, "' input '", info.name, "': expected ",
                              want.is_mutable ? "a mutable (in-place updated) cache" : "a read-only input", ", found ",
                              info.is_mutable ? "mutable" : "read-only");
    }
  }
  for (const auto& [name, want] : expected) {
    auto found =
        std::find_if(actual.begin(), actual.end(), [&](const IoTensorInfo& info) { return info.name == name; });
    if (found == actual.end()) {
      return invalid_argument("method '", method, "': missing ", kind, " '", name, "' (expected ",
                              dtype_name(want.dtype), shape_string(want.shape), ")");
    }
  }
  return ok_status();
}

std::map<std::string, Expected> expected_inputs(const HfStaticConfig& c, int64_t seq) {
  std::map<std::string, Expected> inputs;
  inputs["input_ids"] = {DType::kI64, {1, seq}, false};
  inputs["cache_position"] = {DType::kI64, {seq}, false};
  for (int64_t layer = 0; layer < c.num_layers; ++layer) {
    const Expected cache{c.cache_dtype, {1, c.num_kv_heads, c.max_cache_len, c.head_dim}, !c.kv_returned};
    inputs[tensor_name("k_cache_", layer)] = cache;
    inputs[tensor_name("v_cache_", layer)] = cache;
  }
  return inputs;
}

std::map<std::string, Expected> expected_outputs(const HfStaticConfig& c, int64_t seq) {
  std::map<std::string, Expected> outputs;
  outputs["logits"] = {DType::kF32, {1, c.logits_last ? 1 : seq, c.vocab_size}, false};
  if (c.kv_returned) {
    for (int64_t layer = 0; layer < c.num_layers; ++layer) {
      const Expected rows{c.cache_dtype, {1, c.num_kv_heads, seq, c.head_dim}, false};
      outputs[tensor_name("k_new_", layer)] = rows;
      outputs[tensor_name("v_new_", layer)] = rows;
    }
  }
  return outputs;
}

struct MethodBuffers {
  std::unique_ptr<Method> method;
  int64_t seq_len = 0;
  int64_t* input_ids = nullptr;
  int64_t* cache_position = nullptr;
  float* logits = nullptr;
  std::vector<uint8_t*> new_keys;  // returned form: [1, Hkv, S, D] per layer
  std::vector<uint8_t*> new_values;
};

class HfStaticSession final : public LlmSession {
 public:
  HfStaticSession(HfStaticConfig config, std::unique_ptr<IOManager> io) : c_(config), io_(std::move(io)) {}

  Status init(const Program& program) {
    const uint64_t cache_bytes = static_cast<uint64_t>(c_.num_kv_heads * c_.max_cache_len * c_.head_dim) *
                                 dtype_info(c_.cache_dtype).block_bytes;
    STATICLM_RETURN_IF_ERROR(load(program, kPrefill, c_.prefill_len, prefill_));
    STATICLM_RETURN_IF_ERROR(load(program, kDecode, 1, decode_));
    // One cache per layer and kind, allocated once and bound to both methods.
    for (int64_t layer = 0; layer < c_.num_layers; ++layer) {
      for (const char* stem : {"k_cache_", "v_cache_"}) {
        const std::string name = tensor_name(stem, layer);
        STATICLM_ASSIGN_OR_RETURN(void* cache, io_->allocate({kPrefill, name, IoRole::kCache, cache_bytes}));
        STATICLM_RETURN_IF_ERROR(io_->bind_shared(cache, {kDecode, name, IoRole::kCache, cache_bytes}));
        STATICLM_RETURN_IF_ERROR(prefill_.method->bind_input(name, c_.cache_dtype, cache, cache_bytes));
        STATICLM_RETURN_IF_ERROR(decode_.method->bind_input(name, c_.cache_dtype, cache, cache_bytes));
        (stem[0] == 'k' ? key_caches_ : value_caches_).push_back(static_cast<uint8_t*>(cache));
      }
    }
    return ok_status();
  }

  int64_t vocab_size() const override { return c_.vocab_size; }
  int64_t max_cache_len() const override { return c_.max_cache_len; }
  int64_t position() const override { return position_; }
  bool prefill_returns_all_logits() const override { return !c_.logits_last; }
  void reset() override { position_ = 0; }
  IoStats io_stats() const override { return io_->stats(); }

  Status prefill(std::span<const int32_t> tokens, const LogitsSink& sink) override {
    STATICLM_RETURN_IF_ERROR(check_fits(static_cast<int64_t>(tokens.size())));
    const auto total = static_cast<int64_t>(tokens.size());
    for (int64_t begin = 0; begin < total; begin += c_.prefill_len) {
      const int64_t count = std::min(c_.prefill_len, total - begin);
      STATICLM_RETURN_IF_ERROR(
          run_chunk(prefill_, tokens.subspan(static_cast<size_t>(begin), static_cast<size_t>(count)), begin, sink));
    }
    return ok_status();
  }

  Status decode(int32_t token, const LogitsSink& sink) override {
    STATICLM_RETURN_IF_ERROR(check_fits(1));
    const int32_t one[1] = {token};
    return run_chunk(decode_, one, 0, sink);
  }

 private:
  Status check_fits(int64_t count) const {
    if (position_ + count > c_.max_cache_len) {
      return out_of_range("feeding ", count, " tokens at position ", position_, " would exceed the cache length ",
                          c_.max_cache_len);
    }
    return ok_status();
  }

  Status load(const Program& program, std::string_view name, int64_t seq, MethodBuffers& out) {
    STATICLM_ASSIGN_OR_RETURN(out.method, program.load_method(name));
    out.seq_len = seq;
    Method& method = *out.method;
    std::map<std::string, uint8_t*> buffers;
    auto allocate = [&](const IoTensorInfo& info, IoRole role) -> Result<void*> {
      return io_->allocate({name, info.name, role, info.nbytes});
    };
    for (const IoTensorInfo& info : method.inputs()) {
      if (info.name == "input_ids" || info.name == "cache_position") {
        STATICLM_ASSIGN_OR_RETURN(void* buffer, allocate(info, IoRole::kInput));
        STATICLM_RETURN_IF_ERROR(method.bind_input(info.name, info.dtype, buffer, info.nbytes));
        (info.name == "input_ids" ? out.input_ids : out.cache_position) = static_cast<int64_t*>(buffer);
      }
    }
    for (const IoTensorInfo& info : method.outputs()) {
      STATICLM_ASSIGN_OR_RETURN(void* buffer, allocate(info, IoRole::kOutput));
      STATICLM_RETURN_IF_ERROR(method.bind_output(info.name, info.dtype, buffer, info.nbytes));
      buffers[info.name] = static_cast<uint8_t*>(buffer);
    }
    // validate() checked every output exists; a miss here is a bug, reported as such.
    auto output = [&](const std::string& output_name) -> Result<uint8_t*> {
      auto it = buffers.find(output_name);
      if (it == buffers.end()) {
        return internal_error("method '", name, "' has no output '", output_name, "' after validation");
      }
      return it->second;
    };
    STATICLM_ASSIGN_OR_RETURN(uint8_t* logits, output("logits"));
    out.logits = reinterpret_cast<float*>(logits);
    for (int64_t layer = 0; c_.kv_returned && layer < c_.num_layers; ++layer) {
      STATICLM_ASSIGN_OR_RETURN(uint8_t* keys, output(tensor_name("k_new_", layer)));
      STATICLM_ASSIGN_OR_RETURN(uint8_t* values, output(tensor_name("v_new_", layer)));
      out.new_keys.push_back(keys);
      out.new_values.push_back(values);
    }
    return ok_status();
  }

  // Runs one chunk of `tokens` (at most the method's length) at the current position; a short
  // chunk is left-padded with position -1, as the contract says.
  Status run_chunk(MethodBuffers& m, std::span<const int32_t> tokens, int64_t first_index, const LogitsSink& sink) {
    const int64_t count = static_cast<int64_t>(tokens.size());
    const int64_t pad = m.seq_len - count;
    for (int64_t s = 0; s < m.seq_len; ++s) {
      const bool real = s >= pad;
      m.input_ids[s] = real ? tokens[static_cast<size_t>(s - pad)] : 0;
      m.cache_position[s] = real ? position_ + (s - pad) : -1;
    }
    STATICLM_RETURN_IF_ERROR(m.method->execute());
    if (c_.kv_returned) {
      write_returned_rows(m, pad);
    }
    const auto vocab = static_cast<size_t>(c_.vocab_size);
    if (sink) {
      if (c_.logits_last || m.seq_len == 1) {
        sink(first_index + count - 1, std::span<const float>(m.logits, vocab));
      } else {
        for (int64_t s = pad; s < m.seq_len; ++s) {
          sink(first_index + s - pad, std::span<const float>(m.logits + static_cast<size_t>(s) * vocab, vocab));
        }
      }
    }
    position_ += count;
    return ok_status();
  }

  // Returned-update form: copy row s of each k_new / v_new [1, Hkv, S, D] into cache slot
  // cache_position[s] of [1, Hkv, C, D].
  void write_returned_rows(const MethodBuffers& m, int64_t pad) {
    const size_t row_bytes = static_cast<size_t>(c_.head_dim) * dtype_info(c_.cache_dtype).block_bytes;
    for (size_t layer = 0; layer < static_cast<size_t>(c_.num_layers); ++layer) {
      for (int kind = 0; kind < 2; ++kind) {
        const uint8_t* rows = kind == 0 ? m.new_keys[layer] : m.new_values[layer];
        uint8_t* cache = kind == 0 ? key_caches_[layer] : value_caches_[layer];
        for (int64_t head = 0; head < c_.num_kv_heads; ++head) {
          for (int64_t s = pad; s < m.seq_len; ++s) {
            const int64_t slot = m.cache_position[s];
            std::memcpy(cache + static_cast<size_t>(head * c_.max_cache_len + slot) * row_bytes,
                        rows + static_cast<size_t>(head * m.seq_len + s) * row_bytes, row_bytes);
          }
        }
      }
    }
  }

  HfStaticConfig c_;
  std::unique_ptr<IOManager> io_;
  MethodBuffers prefill_;
  MethodBuffers decode_;
  std::vector<uint8_t*> key_caches_;
  std::vector<uint8_t*> value_caches_;
  int64_t position_ = 0;
};

class HfStaticV1 final : public LlmContract {
 public:
  std::string_view name() const override { return "hf_static"; }
  int64_t version() const override { return 1; }

  Status validate(const Program& program) const override {
    auto config = HfStaticConfig::from_program(program.file());
    if (!config.ok()) {
      return config.status().with_context(str_cat("hf_static v1: '", program.file().path(), "'"));
    }
    for (auto [method, seq] : {std::pair{kPrefill, config->prefill_len}, std::pair{kDecode, int64_t{1}}}) {
      auto inputs = program.method_inputs(method);
      if (!inputs.ok()) {
        return inputs.status().with_context("hf_static v1");
      }
      auto outputs = program.method_outputs(method);
      STATICLM_RETURN_IF_ERROR(outputs.status());
      Status status = check_io(method, "input", *inputs, expected_inputs(*config, seq));
      if (status.ok()) {
        status = check_io(method, "output", *outputs, expected_outputs(*config, seq));
      }
      if (!status.ok()) {
        return status.with_context(str_cat("hf_static v1: '", program.file().path(), "'"));
      }
    }
    return ok_status();
  }

  Result<std::unique_ptr<LlmSession>> open(const Program& program, const SessionOptions& options) const override {
    STATICLM_RETURN_IF_ERROR(validate(program));
    STATICLM_ASSIGN_OR_RETURN(HfStaticConfig config, HfStaticConfig::from_program(program.file()));
    std::shared_ptr<IOBufferAllocator> allocator = options.allocator;
    if (!allocator) {
      allocator = std::make_shared<HeapAllocator>();
    }
    auto io = std::make_unique<IOManager>(allocator, IoManagerOptions{options.strict_io, 64});
    auto session = std::make_unique<HfStaticSession>(config, std::move(io));
    STATICLM_RETURN_IF_ERROR(session->init(program));
    return std::unique_ptr<LlmSession>(std::move(session));
  }
};

}  // namespace

Result<HfStaticConfig> HfStaticConfig::from_program(const ProgramFile& file) {
  HfStaticConfig c;
  STATICLM_ASSIGN_OR_RETURN(c.vocab_size, positive_int(file, "vocab_size"));
  STATICLM_ASSIGN_OR_RETURN(c.num_layers, positive_int(file, "num_layers"));
  STATICLM_ASSIGN_OR_RETURN(c.num_kv_heads, positive_int(file, "num_kv_heads"));
  STATICLM_ASSIGN_OR_RETURN(c.head_dim, positive_int(file, "head_dim"));
  STATICLM_ASSIGN_OR_RETURN(c.max_cache_len, positive_int(file, "max_cache_len"));
  STATICLM_ASSIGN_OR_RETURN(c.prefill_len, positive_int(file, "prefill_len"));
  if (c.prefill_len > c.max_cache_len) {
    return invalid_argument("metadata 'prefill_len' (", c.prefill_len, ") exceeds 'max_cache_len' (", c.max_cache_len,
                            ")");
  }
  STATICLM_ASSIGN_OR_RETURN(std::string cache_dtype, one_of(file, "cache_dtype", {"f32", "f16"}));
  c.cache_dtype = cache_dtype == "f16" ? DType::kF16 : DType::kF32;
  STATICLM_ASSIGN_OR_RETURN(std::string kv_update, one_of(file, "kv_update", {"in-place", "returned"}));
  c.kv_returned = kv_update == "returned";
  STATICLM_ASSIGN_OR_RETURN(std::string logits, one_of(file, "logits", {"all", "last"}));
  c.logits_last = logits == "last";
  return c;
}

std::unique_ptr<LlmContract> make_hf_static_v1_contract() {
  return std::make_unique<HfStaticV1>();
}

}  // namespace staticlm
