// SPDX-License-Identifier: Apache-2.0
// I/O contracts: a program names the contract it implements (metadata `contract`, version
// `contract_version`); the runner selects the implementation from a ContractRegistry, which
// validates the program file against the contract before it is prepared and then opens any
// number of sessions on the prepared, shared Program.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "staticlm/core/result.h"
#include "staticlm/llm/io_manager.h"
#include "staticlm/runtime/program.h"

namespace staticlm {

// Receives the logits of fed token `token_index` (counted from the first token of the call).
using LogitsSink = std::function<void(int64_t token_index, std::span<const float> logits)>;

// Receives the final-normed hidden state of fed token `token_index` (LlmSession::embed).
using HiddenStateSink = std::function<void(int64_t token_index, std::span<const float> hidden_state)>;

// Which logits a prefill hands its sink: every fed token's (of a program that keeps them all), or
// the last fed token's alone, all that sampling the next token reads.
enum class PrefillLogits { kEvery, kLast };

// A validated program with its I/O buffers allocated: feed tokens, get logits.
class LlmSession {
 public:
  virtual ~LlmSession() = default;
  virtual int64_t vocab_size() const = 0;
  virtual int64_t max_cache_len() const = 0;
  // Tokens already in the cache.
  virtual int64_t position() const = 0;
  // True when prefill reports the logits of every fed token, false when only of the last.
  virtual bool prefill_returns_all_logits() const = 0;
  // Feeds `tokens` through the prefill method in chunks, handing `sink` the logits `wanted` names
  // (a program that keeps only the last position's gives the last fed token's either way). What
  // the sink is not handed is not computed: the chunks before the last compute no logits, and
  // with kLast the last one computes them, and its last layer after attention, for its last row.
  // Fails with OutOfRange, before any work, when they would not fit in the cache.
  virtual Status prefill(std::span<const int32_t> tokens, const LogitsSink& sink, PrefillLogits wanted) = 0;
  Status prefill(std::span<const int32_t> tokens, const LogitsSink& sink) {
    return prefill(tokens, sink, PrefillLogits::kEvery);
  }
  // Feeds one token through the decode method.
  virtual Status decode(int32_t token, const LogitsSink& sink) = 0;
  // The tokens in the cache, in order (position() of them).
  virtual std::span<const int32_t> cached_tokens() const = 0;
  // Forgets the cached tokens (the cache memory is kept).
  virtual void reset() = 0;
  // Keeps the first `length` cached tokens and forgets the rest (no-op when length >=
  // position()); a later feed overwrites the forgotten slots, which no query attends to meanwhile.
  virtual void truncate(int64_t length) = 0;
  virtual IoStats io_stats() const = 0;
  // The width of the hidden state embed() hands out, and the pooling the program suggests for it
  // ("mean" or "last"); empty when the program has no embeddings method.
  virtual int64_t hidden_size() const = 0;
  virtual std::string_view embedding_pooling() const { return {}; }
  // Feeds `tokens` as prefill does (the same cache writes), handing `sink` each fed token's
  // final-normed hidden state instead of its logits. FailedPrecondition when the program has no
  // embeddings method; OutOfRange, before any work, when the tokens would not fit in the cache.
  virtual Status embed(std::span<const int32_t> tokens, const HiddenStateSink& sink);
  // The used part of every cache, in an order of the contract's own, for a session file
  // (session_file.h). Unimplemented for a contract whose sessions cannot be saved.
  virtual Result<std::vector<uint8_t>> cache_contents() const;
  // Replaces what the session holds with `tokens` and their caches' `contents` (cache_contents'
  // layout). InvalidArgument, changing nothing, when they do not fit these caches.
  virtual Status restore_cache(std::span<const int32_t> tokens, std::span<const uint8_t> contents);
};

struct SessionOptions {
  std::shared_ptr<IOBufferAllocator> allocator;  // heap when empty
  bool strict_io = false;
  // Serves the buffers `allocator` cannot (unless strict_io); the heap when empty.
  std::shared_ptr<IOBufferAllocator> fallback_allocator = nullptr;
  // Where set, every kernel call of the session's methods is timed into it (staticlm bench
  // --ops); it must outlive the session, which is its only writer.
  OpProfile* op_profile = nullptr;
};

// A session over one prepared Program: its own I/O buffers and KV caches (through the
// allocator), its own method sessions; many may run at once on one Program. A session is used by
// one thread at a time.

class LlmContract {
 public:
  virtual ~LlmContract() = default;
  virtual std::string_view name() const = 0;
  virtual int64_t version() const = 0;
  // Checks every method, input and output of the file against the contract and its metadata,
  // before anything is prepared. Fails with InvalidArgument naming the method, the tensor, what
  // was expected and what was found.
  virtual Status validate(const ProgramFile& file) const = 0;
  // Validates, opens the program's methods as method sessions and allocates every buffer through
  // the allocator. Thread-safe: sessions may be opened on one Program from several threads.
  virtual Result<std::unique_ptr<LlmSession>> open(std::shared_ptr<const Program> program,
                                                   const SessionOptions& options) const = 0;
};

class ContractRegistry {
 public:
  Status add(std::unique_ptr<LlmContract> contract);
  // The contract the program declares. Fails with InvalidArgument when the program declares
  // none, Unimplemented for an unknown contract or version, listing what this build supports.
  Result<const LlmContract*> select(const ProgramFile& file) const;
  std::vector<std::pair<std::string, int64_t>> supported() const;

 private:
  std::vector<std::unique_ptr<LlmContract>> contracts_;
};

// Adds the contracts this build implements (hf_static v1).
Status register_builtin_contracts(ContractRegistry& registry);

}  // namespace staticlm
