// SPDX-License-Identifier: Apache-2.0
#include "staticlm/llm/hf_static_v1.h"

#include <algorithm>
#include <cstring>
#include <map>

#include "staticlm/contracts/hf_static_v1_spec.h"

namespace staticlm {
namespace {

namespace spec = hf_static_v1;

Status check_io(std::string_view method, std::string_view kind, const std::vector<IoTensorInfo>& actual,
                const std::vector<spec::TensorRule>& expected) {
  std::map<std::string, const spec::TensorRule*, std::less<>> rules;
  for (const spec::TensorRule& rule : expected) {
    rules[rule.name] = &rule;
  }
  for (const IoTensorInfo& info : actual) {
    auto it = rules.find(info.name);
    if (it == rules.end()) {
      return invalid_argument("method '", method, "': unexpected ", kind, " '", info.name,
                              "' (hf_static v1 does not define it)");
    }
    const spec::TensorRule& want = *it->second;
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
  for (const auto& [name, want] : rules) {
    auto found = std::find_if(actual.begin(), actual.end(),
                              [&wanted = name](const IoTensorInfo& info) { return info.name == wanted; });
    if (found == actual.end()) {
      return invalid_argument("method '", method, "': missing ", kind, " '", name, "' (expected ",
                              dtype_name(want->dtype), shape_string(want->shape), ")");
    }
  }
  return ok_status();
}

struct MethodBuffers {
  std::unique_ptr<MethodSession> session;
  int64_t seq_len = 0;
  int64_t* input_ids = nullptr;
  int64_t* cache_position = nullptr;
  float* logits = nullptr;  // or, for the embeddings method, hidden_states
  // Per output, what a chunk reads that needs no logits, and one that needs the last row's.
  std::vector<RowNeed> no_logits;
  std::vector<RowNeed> last_logits;
  std::vector<uint8_t*> new_keys;  // returned form: [1, Hkv, S, D] per layer
  std::vector<uint8_t*> new_values;
};

class HfStaticSession final : public LlmSession {
 public:
  HfStaticSession(spec::Config config, std::shared_ptr<const Program> program, std::unique_ptr<IOManager> io,
                  OpProfile* op_profile)
      : c_(config), program_(std::move(program)), io_(std::move(io)), op_profile_(op_profile) {}

  Status init() {
    const uint64_t cache_bytes = static_cast<uint64_t>(c_.num_kv_heads * c_.max_cache_len) * row_bytes();
    // Reserved once: decode appends a token per step and must not reallocate mid-conversation.
    tokens_.reserve(static_cast<size_t>(c_.max_cache_len));
    STATICLM_RETURN_IF_ERROR(open_method(spec::kPrefill, c_.prefill_len, prefill_));
    STATICLM_RETURN_IF_ERROR(open_method(spec::kDecode, 1, decode_));
    // One cache per layer and kind, allocated once and bound to both methods.
    for (int64_t layer = 0; layer < c_.num_layers; ++layer) {
      for (bool keys : {true, false}) {
        const std::string name = keys ? spec::key_cache_name(layer) : spec::value_cache_name(layer);
        STATICLM_ASSIGN_OR_RETURN(ExternalBuffer cache,
                                  io_->allocate({spec::kPrefill, name, IoRole::kCache, cache_bytes}));
        STATICLM_RETURN_IF_ERROR(io_->bind_shared(cache, {spec::kDecode, name, IoRole::kCache, cache_bytes}));
        STATICLM_RETURN_IF_ERROR(prefill_.session->bind_input(name, c_.cache_dtype, cache));
        STATICLM_RETURN_IF_ERROR(decode_.session->bind_input(name, c_.cache_dtype, cache));
        caches_.push_back({name, cache});
      }
    }
    return ok_status();
  }

  int64_t vocab_size() const override { return c_.vocab_size; }
  int64_t max_cache_len() const override { return c_.max_cache_len; }
  int64_t position() const override { return position_; }
  bool prefill_returns_all_logits() const override { return !c_.logits_last; }
  std::span<const int32_t> cached_tokens() const override { return tokens_; }
  void reset() override { truncate(0); }
  void truncate(int64_t length) override {
    position_ = std::clamp<int64_t>(length, 0, position_);
    tokens_.resize(static_cast<size_t>(position_));
  }
  IoStats io_stats() const override { return io_->stats(); }
  int64_t hidden_size() const override { return c_.hidden_size; }
  std::string_view embedding_pooling() const override { return c_.embedding_pooling; }

  Status embed(std::span<const int32_t> tokens, const HiddenStateSink& sink) override {
    if (c_.embedding_pooling.empty()) {
      return LlmSession::embed(tokens, sink);
    }
    STATICLM_RETURN_IF_ERROR(check_fits(static_cast<int64_t>(tokens.size())));
    // Opened on first use: a session that never embeds holds no buffers for the method. A failed
    // open is not retried: what it allocated stays with the session's I/O manager.
    if (!embeddings_.session) {
      if (embeddings_failure_.ok()) {
        embeddings_failure_ = open_embeddings();
      }
      STATICLM_RETURN_IF_ERROR(embeddings_failure_);
    }
    const auto total = static_cast<int64_t>(tokens.size());
    const auto width = static_cast<size_t>(c_.hidden_size);
    for (int64_t begin = 0; begin < total; begin += c_.prefill_len) {
      const int64_t count = std::min(c_.prefill_len, total - begin);
      const auto chunk = tokens.subspan(static_cast<size_t>(begin), static_cast<size_t>(count));
      const int64_t pad = fill_chunk(embeddings_, chunk);
      STATICLM_RETURN_IF_ERROR(embeddings_.session->execute());
      if (c_.kv_returned) {
        write_returned_rows(embeddings_, pad);
      }
      for (int64_t s = pad; sink && s < embeddings_.seq_len; ++s) {
        sink(begin + s - pad, std::span<const float>(embeddings_.logits + static_cast<size_t>(s) * width, width));
      }
      advance(chunk);
    }
    return ok_status();
  }

  // Per layer, keys then values, per kv head: the rows of the cached positions.
  Result<std::vector<uint8_t>> cache_contents() const override {
    const size_t rows = static_cast<size_t>(position_) * row_bytes();
    std::vector<uint8_t> out;
    out.reserve(rows * static_cast<size_t>(c_.num_layers * 2 * c_.num_kv_heads));
    for_each_cache_block(position_, [&](uint8_t* block, size_t bytes) { out.insert(out.end(), block, block + bytes); });
    return out;
  }

  Status restore_cache(std::span<const int32_t> tokens, std::span<const uint8_t> contents) override {
    const auto count = static_cast<int64_t>(tokens.size());
    if (count > c_.max_cache_len) {
      return invalid_argument("the saved session holds ", count, " tokens and this program's cache ", c_.max_cache_len);
    }
    const size_t expected =
        static_cast<size_t>(count) * row_bytes() * static_cast<size_t>(c_.num_layers * 2 * c_.num_kv_heads);
    if (contents.size() != expected) {
      return invalid_argument("the saved caches are ", contents.size(), " bytes; ", count,
                              " tokens of this program's "
                              "caches are ",
                              expected);
    }
    for (int32_t token : tokens) {
      if (token < 0 || token >= c_.vocab_size) {
        return invalid_argument("the saved session holds token ", token, ", outside the vocabulary [0, ", c_.vocab_size,
                                ")");
      }
    }
    size_t at = 0;
    for_each_cache_block(count, [&](uint8_t* block, size_t bytes) {
      std::memcpy(block, contents.data() + at, bytes);
      at += bytes;
    });
    tokens_.assign(tokens.begin(), tokens.end());
    position_ = count;
    return ok_status();
  }

  Status prefill(std::span<const int32_t> tokens, const LogitsSink& sink, PrefillLogits wanted) override {
    STATICLM_RETURN_IF_ERROR(check_fits(static_cast<int64_t>(tokens.size())));
    const auto total = static_cast<int64_t>(tokens.size());
    for (int64_t begin = 0; begin < total; begin += c_.prefill_len) {
      const int64_t count = std::min(c_.prefill_len, total - begin);
      // Where only the last token's logits are read, an earlier chunk computes none: skipping
      // them skips the head's matrix (113 MB at f32 on SmolLM-135M) and the last layer after
      // its attention; the last chunk computes its last row's.
      const bool last_only = c_.logits_last || wanted == PrefillLogits::kLast;
      const RowNeed logits = !last_only ? RowNeed::kAll : (begin + count == total ? RowNeed::kLastRow : RowNeed::kNone);
      STATICLM_RETURN_IF_ERROR(run_chunk(
          prefill_, tokens.subspan(static_cast<size_t>(begin), static_cast<size_t>(count)), begin, sink, logits));
    }
    return ok_status();
  }

  Status decode(int32_t token, const LogitsSink& sink) override {
    STATICLM_RETURN_IF_ERROR(check_fits(1));
    const int32_t one[1] = {token};
    return run_chunk(decode_, one, 0, sink, RowNeed::kAll);
  }

 private:
  Status check_fits(int64_t count) const {
    if (position_ + count > c_.max_cache_len) {
      return out_of_range("feeding ", count, " tokens at position ", position_, " would exceed the cache length ",
                          c_.max_cache_len);
    }
    return ok_status();
  }

  Status open_embeddings() {
    MethodBuffers method;
    STATICLM_RETURN_IF_ERROR(open_method(spec::kEmbeddings, c_.prefill_len, method));
    for (const auto& [name, cache] : caches_) {
      STATICLM_RETURN_IF_ERROR(io_->bind_shared(cache, {spec::kEmbeddings, name, IoRole::kCache, cache.size}));
      STATICLM_RETURN_IF_ERROR(method.session->bind_input(name, c_.cache_dtype, cache));
    }
    embeddings_ = std::move(method);
    return ok_status();
  }

  Status open_method(std::string_view name, int64_t seq, MethodBuffers& out) {
    STATICLM_ASSIGN_OR_RETURN(out.session, program_->new_session(name));
    out.seq_len = seq;
    MethodSession& session = *out.session;
    session.set_op_profile(op_profile_);
    std::map<std::string, uint8_t*, std::less<>> buffers;
    for (const IoTensorInfo& info : session.inputs()) {
      if (info.name == spec::kInputIds || info.name == spec::kCachePosition) {
        STATICLM_ASSIGN_OR_RETURN(ExternalBuffer buffer, io_->allocate({name, info.name, IoRole::kInput, info.nbytes}));
        STATICLM_RETURN_IF_ERROR(session.bind_input(info.name, info.dtype, buffer));
        (info.name == spec::kInputIds ? out.input_ids : out.cache_position) = static_cast<int64_t*>(buffer.data);
      }
    }
    for (const IoTensorInfo& info : session.outputs()) {
      STATICLM_ASSIGN_OR_RETURN(ExternalBuffer buffer, io_->allocate({name, info.name, IoRole::kOutput, info.nbytes}));
      STATICLM_RETURN_IF_ERROR(session.bind_output(info.name, info.dtype, buffer));
      buffers[info.name] = static_cast<uint8_t*>(buffer.data);
    }
    // validate() checked every output exists; a miss here is a bug, reported as such.
    auto output = [&](std::string_view output_name) -> Result<uint8_t*> {
      auto it = buffers.find(output_name);
      if (it == buffers.end()) {
        return internal_error("method '", name, "' has no output '", output_name, "' after validation");
      }
      return it->second;
    };
    for (int64_t layer = 0; c_.kv_returned && layer < c_.num_layers; ++layer) {
      STATICLM_ASSIGN_OR_RETURN(uint8_t * keys, output(spec::new_key_name(layer)));
      STATICLM_ASSIGN_OR_RETURN(uint8_t * values, output(spec::new_value_name(layer)));
      out.new_keys.push_back(keys);
      out.new_values.push_back(values);
    }
    if (name == spec::kEmbeddings) {
      STATICLM_ASSIGN_OR_RETURN(uint8_t * hidden, output(spec::kHiddenStates));
      out.logits = reinterpret_cast<float*>(hidden);
      return ok_status();
    }
    STATICLM_ASSIGN_OR_RETURN(uint8_t * logits, output(spec::kLogits));
    out.logits = reinterpret_cast<float*>(logits);
    const auto logits_index = static_cast<size_t>(session.method().output_index(spec::kLogits));
    out.no_logits.assign(session.outputs().size(), RowNeed::kAll);
    out.no_logits[logits_index] = RowNeed::kNone;
    out.last_logits = out.no_logits;
    out.last_logits[logits_index] = RowNeed::kLastRow;
    return ok_status();
  }

  // Runs one chunk of `tokens` (at most the method's length) at the current position; a short
  // chunk is left-padded with position -1, as the contract says. Of the logits, it computes and
  // hands `sink` what `logits` names: all of them, the chunk's last row, or none.
  Status run_chunk(MethodBuffers& m, std::span<const int32_t> tokens, int64_t first_index, const LogitsSink& sink,
                   RowNeed logits) {
    const int64_t count = static_cast<int64_t>(tokens.size());
    const int64_t pad = fill_chunk(m, tokens);
    STATICLM_RETURN_IF_ERROR(logits == RowNeed::kAll
                                 ? m.session->execute()
                                 : m.session->execute(logits == RowNeed::kLastRow ? m.last_logits : m.no_logits));
    if (c_.kv_returned) {
      write_returned_rows(m, pad);
    }
    const auto vocab = static_cast<size_t>(c_.vocab_size);
    if (sink && logits != RowNeed::kNone) {
      if (c_.logits_last || m.seq_len == 1) {
        sink(first_index + count - 1, std::span<const float>(m.logits, vocab));
      } else if (logits == RowNeed::kLastRow) {  // the last of the chunk's rows, the only one computed
        sink(first_index + count - 1,
             std::span<const float>(m.logits + static_cast<size_t>(m.seq_len - 1) * vocab, vocab));
      } else {
        for (int64_t s = pad; s < m.seq_len; ++s) {
          sink(first_index + s - pad, std::span<const float>(m.logits + static_cast<size_t>(s) * vocab, vocab));
        }
      }
    }
    advance(tokens);
    return ok_status();
  }

  // Writes `tokens` at the current position into m's inputs, left-padded; returns the padding.
  int64_t fill_chunk(const MethodBuffers& m, std::span<const int32_t> tokens) const {
    const int64_t pad = m.seq_len - static_cast<int64_t>(tokens.size());
    for (int64_t s = 0; s < m.seq_len; ++s) {
      const bool real = s >= pad;
      m.input_ids[s] = real ? tokens[static_cast<size_t>(s - pad)] : 0;
      m.cache_position[s] = real ? position_ + (s - pad) : -1;
    }
    return pad;
  }

  void advance(std::span<const int32_t> tokens) {
    position_ += static_cast<int64_t>(tokens.size());
    tokens_.insert(tokens_.end(), tokens.begin(), tokens.end());
  }

  uint8_t* cache_of(size_t layer, bool keys) const {
    return static_cast<uint8_t*>(caches_[2 * layer + (keys ? 0 : 1)].second.data);
  }

  // f32 / f16 elements, or q8_0 blocks of 32 (the contract requires whole blocks).
  size_t row_bytes() const {
    const DTypeInfo& info = dtype_info(c_.cache_dtype);
    return static_cast<size_t>(c_.head_dim / info.block_elements) * info.block_bytes;
  }

  // Calls `visit` with each cache's first `count` rows of each kv head ([1, Hkv, C, D]: a head's
  // rows lie together), layer by layer, keys before values.
  template <typename Visit>
  void for_each_cache_block(int64_t count, Visit visit) const {
    const size_t bytes = static_cast<size_t>(count) * row_bytes();
    for (size_t layer = 0; layer < static_cast<size_t>(c_.num_layers); ++layer) {
      for (uint8_t* cache : {cache_of(layer, true), cache_of(layer, false)}) {
        for (int64_t head = 0; head < c_.num_kv_heads; ++head) {
          visit(cache + static_cast<size_t>(head * c_.max_cache_len) * row_bytes(), bytes);
        }
      }
    }
  }

  // Returned-update form: copy row s of each k_new / v_new [1, Hkv, S, D] into cache slot
  // cache_position[s] of [1, Hkv, C, D].
  void write_returned_rows(const MethodBuffers& m, int64_t pad) {
    const size_t row_bytes = this->row_bytes();
    for (size_t layer = 0; layer < static_cast<size_t>(c_.num_layers); ++layer) {
      for (int kind = 0; kind < 2; ++kind) {
        const uint8_t* rows = kind == 0 ? m.new_keys[layer] : m.new_values[layer];
        uint8_t* cache = cache_of(layer, kind == 0);
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

  spec::Config c_;
  std::shared_ptr<const Program> program_;
  // Declared before the method sessions, so the buffers they are bound to outlive them.
  std::unique_ptr<IOManager> io_;
  OpProfile* op_profile_ = nullptr;  // the session options'; null: no timing
  MethodBuffers prefill_;
  MethodBuffers decode_;
  MethodBuffers embeddings_;   // opened by the first embed()
  Status embeddings_failure_;  // why that open failed
  // Per layer its key cache, then its value cache, by input name (a method opened later binds them).
  std::vector<std::pair<std::string, ExternalBuffer>> caches_;
  int64_t position_ = 0;
  std::vector<int32_t> tokens_;  // what the cache holds: position_ of them
};

Status check_method(const ProgramFile& file, std::string_view method, int64_t seq,
                    const std::vector<spec::TensorRule>& expected_outputs, const spec::Config& config) {
  auto inputs = method_inputs(file, method);
  if (!inputs.ok()) {
    return inputs.status().with_context("hf_static v1");
  }
  STATICLM_ASSIGN_OR_RETURN(std::vector<IoTensorInfo> outputs, method_outputs(file, method));
  Status status = check_io(method, "input", *inputs, spec::expected_inputs(config, seq));
  if (status.ok()) {
    status = check_io(method, "output", outputs, expected_outputs);
  }
  if (!status.ok()) {
    return status.with_context(str_cat("hf_static v1: '", file.path(), "'"));
  }
  return ok_status();
}

class HfStaticV1 final : public LlmContract {
 public:
  std::string_view name() const override { return spec::kName; }
  int64_t version() const override { return spec::kVersion; }

  Status validate(const ProgramFile& file) const override {
    auto config = spec::Config::from_program(file);
    if (!config.ok()) {
      return config.status().with_context(str_cat("hf_static v1: '", file.path(), "'"));
    }
    for (std::string_view method : {spec::kPrefill, spec::kDecode}) {
      const int64_t seq = spec::chunk_length(*config, method);
      STATICLM_RETURN_IF_ERROR(check_method(file, method, seq, spec::expected_outputs(*config, seq), *config));
    }
    const bool has_embeddings = file.find_method(spec::kEmbeddings) != nullptr;
    if (has_embeddings != !config->embedding_pooling.empty()) {
      return invalid_argument("hf_static v1: '", file.path(), "': ",
                              has_embeddings ? "method 'embeddings' needs metadata 'embedding_pooling' (mean or last)"
                                             : "metadata 'embedding_pooling' describes an embeddings method, and the "
                                               "program has none");
    }
    if (has_embeddings) {
      STATICLM_RETURN_IF_ERROR(check_method(file, spec::kEmbeddings, config->prefill_len,
                                            spec::expected_embedding_outputs(*config), *config));
    }
    return ok_status();
  }

  Result<std::unique_ptr<LlmSession>> open(std::shared_ptr<const Program> program,
                                           const SessionOptions& options) const override {
    STATICLM_RETURN_IF_ERROR(validate(program->file()));
    STATICLM_ASSIGN_OR_RETURN(spec::Config config, spec::Config::from_program(program->file()));
    std::shared_ptr<IOBufferAllocator> allocator = options.allocator;
    if (!allocator) {
      allocator = std::make_shared<HeapAllocator>();
    }
    auto io =
        std::make_unique<IOManager>(allocator, IoManagerOptions{options.strict_io, 64, options.fallback_allocator});
    auto session = std::make_unique<HfStaticSession>(config, std::move(program), std::move(io), options.op_profile);
    STATICLM_RETURN_IF_ERROR(session->init());
    return std::unique_ptr<LlmSession>(std::move(session));
  }
};

}  // namespace

std::unique_ptr<LlmContract> make_hf_static_v1_contract() {
  return std::make_unique<HfStaticV1>();
}

}  // namespace staticlm
