// SPDX-License-Identifier: Apache-2.0
// Engine: the facade every front end (the CLI, the Python module, the server) drives an exported
// LLM program through, so none of them holds policy of its own. open() maps, validates and
// prepares the program once (contract chosen from its metadata, delegates initialised with their
// backends' runtime options, the tokenizer loaded, the I/O allocator chosen), then any number of
// sessions run on it concurrently; generate() applies the program's end-of-sequence policy.
//
// Policy, in one place:
// - I/O allocator: the one named in EngineOptions; else the preferred allocator of the first
//   delegate backend of the program that names one this build has (rpcmem for qnn); else heap.
// - End of sequence: every id in the program's eos_token_ids metadata, plus the tokenizer's.
// - Sampling, as transformers' generate(): the checkpoint's generation_config (generation.*
//   metadata; greedy unless do_sample), each parameter the caller gives overriding its own, and a
//   fresh random seed unless one is given (choose_sampling). default_generation() stays greedy for
//   callers that set sampling themselves.
#pragma once

#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "staticlm/core/result.h"
#include "staticlm/llm/allocator_registry.h"
#include "staticlm/llm/contract.h"
#include "staticlm/llm/generator.h"
#include "staticlm/llm/grammar/grammar_spec.h"
#include "staticlm/llm/sampling/sampling_choice.h"
#include "staticlm/llm/tokenizer/tokenizer.h"
#include "staticlm/options/option_value.h"
#include "staticlm/runtime/program.h"

namespace staticlm {

// What this build can run with; builtin/ fills one for the front ends.
struct EngineRuntime {
  std::shared_ptr<const KernelRegistry> kernels;
  std::shared_ptr<const BackendRuntimeRegistry> backends;
  std::shared_ptr<const ContractRegistry> contracts;
  std::shared_ptr<const AllocatorRegistry> allocators;
};

struct EngineOptions {
  int num_threads = 0;       // worker threads, counting the caller's; 0 = all cores
  std::string io_allocator;  // an AllocatorRegistry name; empty = the policy above
  bool strict_io = false;    // a heap fallback is an error instead of a counted warning
  // Runtime options by backend id (each backend's runtime option schema validates them).
  std::map<std::string, OptionMap, std::less<>> backend_options;
  // The worker threads to run on, shared with another engine (a draft program's runs between the
  // target's); created with num_threads when empty.
  std::shared_ptr<ThreadPool> thread_pool;
};

class Engine {
 public:
  // Fails with the errors of ProgramFile::open, ContractRegistry::select, the contract's
  // validate, Program::load and the tokenizer loader (each naming the file and what is wrong);
  // with NotFound for an unknown io_allocator; InvalidArgument when a registry is missing.
  static Result<std::unique_ptr<Engine>> open(const std::string& path, const EngineOptions& options,
                                              EngineRuntime runtime);
  ~Engine();

  const ProgramFile& file() const { return program_->file(); }
  const std::shared_ptr<const Program>& program() const { return program_; }
  const LlmContract& contract() const { return *contract_; }
  // The program's embedded tokenizer; NotFound (naming the file) when it embeds none.
  Result<const Tokenizer*> tokenizer() const;
  const std::string& io_allocator() const { return io_allocator_name_; }
  // Whether speculative decoding can check guesses on this program: FailedPrecondition saying how
  // to export it when it keeps only the last position's logits.
  Status check_speculation() const;
  // Whether `draft` can propose tokens for this program (SpeculationOptions::draft): both embed
  // the same tokenizer (tokenizer_sha256), and check_speculation(). InvalidArgument naming what
  // differs.
  Status check_draft(const Engine& draft) const;
  double load_seconds() const { return load_seconds_; }

  // A new session: its own caches and I/O buffers from the engine's allocator. Thread-safe.
  // With `op_profile`, its kernel calls are timed into it (SessionOptions::op_profile).
  Result<std::unique_ptr<LlmSession>> new_session(OpProfile* op_profile = nullptr) const;

  // GenerationOptions with the program's end-of-sequence ids (see above) and greedy sampling.
  GenerationOptions default_generation() const;
  // What the checkpoint's generation_config.json recommends (generation.* metadata), with
  // transformers' GenerationConfig defaults for what it leaves out (temperature 1, top_k 50,
  // top_p 1, no min_p, repetition_penalty 1). Without do_sample: greedy, the repetition penalty
  // still applied, as generate() applies it.
  SamplingParams program_sampling_defaults() const;
  // program_sampling_defaults() with what the caller gave in place (resolve_sampling: its errors).
  Result<SamplingParams> choose_sampling(const SamplingOverrides& given) const;

  // `spec` compiled against the program's tokenizer, for GenerationOptions::grammar. The
  // tokenizer's trie is built on the first call; the last few grammars compiled are kept, so
  // requests repeating a schema reuse its compiled grammar and the token sets it has computed.
  // Thread-safe. Fails with NotFound when the program embeds no tokenizer, and with the grammar
  // compilers' InvalidArgument naming what is wrong.
  Result<std::shared_ptr<const CompiledGrammar>> compile_grammar(const GrammarSpec& spec) const;

  // Each token's bytes as they continue generated text (TokenVocabulary), built on the first call
  // and shared with the grammars. Thread-safe; NotFound without a tokenizer.
  Result<std::shared_ptr<const TokenVocabulary>> token_vocabulary() const;

  // Encodes `prompt` with the program's tokenizer, generates and streams text (generate_text);
  // GenerationOptions::cancel stops it from another thread.
  Result<GenerationResult> generate(LlmSession& session, std::string_view prompt, const GenerationOptions& options,
                                    const TextCallback& on_text = {}) const;
  // The same from an encoded prompt (a rendered chat template, token ids sent to the server).
  Result<GenerationResult> generate(LlmSession& session, std::span<const int32_t> prompt_tokens,
                                    const GenerationOptions& options, const TextCallback& on_text = {}) const;

 private:
  Engine() = default;

  EngineRuntime runtime_;
  std::shared_ptr<const Program> program_;
  const LlmContract* contract_ = nullptr;
  std::unique_ptr<Tokenizer> tokenizer_;
  Status tokenizer_status_;
  std::shared_ptr<IOBufferAllocator> allocator_;
  std::string io_allocator_name_;
  bool strict_io_ = false;
  double load_seconds_ = 0.0;
  mutable std::mutex grammar_mutex_;
  mutable std::shared_ptr<const TokenVocabulary> grammar_vocabulary_;
  mutable std::list<std::pair<GrammarSpec, std::shared_ptr<const CompiledGrammar>>> recent_grammars_;
};

}  // namespace staticlm
