// SPDX-License-Identifier: Apache-2.0
#include "staticlm/llm/engine.h"

#include <algorithm>
#include <chrono>

#include "staticlm/contracts/hf_static_v1_spec.h"
#include "staticlm/format/metadata.h"
#include "staticlm/llm/program_tokenizer.h"

namespace staticlm {
namespace {

// The allocator the program's delegates read without a copy: the first delegate backend that
// names one this build has.
std::string preferred_allocator(const ProgramFile& file, const BackendRuntimeRegistry& backends,
                                const AllocatorRegistry& allocators) {
  if (const auto* delegates = file.program().delegates()) {
    for (const fb::Delegate* delegate : *delegates) {
      const BackendRuntime* backend = backends.find(delegate->backend_id()->string_view());
      if (backend != nullptr && !backend->preferred_allocator().empty() &&
          allocators.has(backend->preferred_allocator())) {
        return std::string(backend->preferred_allocator());
      }
    }
  }
  return "heap";
}

}  // namespace

Engine::~Engine() = default;

Result<std::unique_ptr<Engine>> Engine::open(const std::string& path, const EngineOptions& options,
                                             EngineRuntime runtime) {
  const auto start = std::chrono::steady_clock::now();
  if (!runtime.kernels || !runtime.backends || !runtime.contracts || !runtime.allocators) {
    return invalid_argument("Engine::open: the runtime needs kernels, backends, contracts and allocators");
  }
  std::unique_ptr<Engine> engine(new Engine());
  engine->runtime_ = std::move(runtime);
  const EngineRuntime& r = engine->runtime_;
  STATICLM_ASSIGN_OR_RETURN(std::unique_ptr<ProgramFile> opened, ProgramFile::open(path));
  std::shared_ptr<const ProgramFile> file = std::move(opened);
  STATICLM_ASSIGN_OR_RETURN(engine->contract_, r.contracts->select(*file));
  // Contract mismatches are reported as such, before any kernel or delegate is prepared.
  STATICLM_RETURN_IF_ERROR(engine->contract_->validate(*file));

  engine->io_allocator_name_ =
      options.io_allocator.empty() ? preferred_allocator(*file, *r.backends, *r.allocators) : options.io_allocator;
  STATICLM_ASSIGN_OR_RETURN(engine->allocator_, r.allocators->create(engine->io_allocator_name_));
  engine->strict_io_ = options.strict_io;

  LoadOptions load;
  load.kernels = r.kernels.get();
  load.backends = r.backends.get();
  load.num_threads = options.num_threads;
  load.thread_pool = options.thread_pool;
  load.backend_options = options.backend_options;
  STATICLM_ASSIGN_OR_RETURN(engine->program_, Program::from_file(file, std::move(load)));

  auto tokenizer = load_program_tokenizer(*file);
  if (tokenizer.ok()) {
    engine->tokenizer_ = std::move(tokenizer).value();
  } else if (tokenizer.status().code() == StatusCode::kNotFound) {
    engine->tokenizer_status_ = tokenizer.status();  // only an error for callers that need text
  } else {
    return tokenizer.status();
  }
  engine->load_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return engine;
}

Status Engine::check_speculation() const {
  auto logits = metadata_string(file(), hf_static_v1::key::kLogits);
  if (logits.ok() && *logits == hf_static_v1::kLogitsLast) {
    return logits_last_cannot_speculate();
  }
  return ok_status();
}

Status Engine::check_draft(const Engine& draft) const {
  STATICLM_RETURN_IF_ERROR(check_speculation());
  namespace key = hf_static_v1::key;
  auto mine = metadata_string(file(), key::kTokenizerSha256);
  auto theirs = metadata_string(draft.file(), key::kTokenizerSha256);
  if (!mine.ok() || !theirs.ok()) {
    return invalid_argument("the draft program and the target must both embed a tokenizer (metadata '",
                            key::kTokenizerSha256, "'); ", mine.ok() ? "the draft" : "the target", " has none");
  }
  if (*mine != *theirs) {
    return invalid_argument("the draft program's tokenizer (sha256 ", theirs->substr(0, 12),
                            "...) differs from the target's (sha256 ", mine->substr(0, 12),
                            "...): a draft must share the target's tokenizer");
  }
  return ok_status();
}

Result<const Tokenizer*> Engine::tokenizer() const {
  if (!tokenizer_) {
    return tokenizer_status_;
  }
  return tokenizer_.get();
}

Result<std::unique_ptr<LlmSession>> Engine::new_session(OpProfile* op_profile) const {
  SessionOptions options{allocator_, strict_io_};
  options.op_profile = op_profile;
  return contract_->open(program_, options);
}

GenerationOptions Engine::default_generation() const {
  GenerationOptions options;
  if (auto eos = metadata_int_list(file(), hf_static_v1::key::kEosTokenIds); eos.ok()) {
    for (int64_t id : *eos) {
      options.eos_ids.push_back(static_cast<int32_t>(id));
    }
  }
  if (tokenizer_) {
    for (int32_t id : tokenizer_->eos_ids()) {
      if (std::find(options.eos_ids.begin(), options.eos_ids.end(), id) == options.eos_ids.end()) {
        options.eos_ids.push_back(id);
      }
    }
  }
  return options;
}

SamplingParams Engine::program_sampling_defaults() const {
  namespace key = hf_static_v1::key;
  const ProgramFile& f = file();
  SamplingParams params;
  // The warpers apply only when sampling, but generate(do_sample=True) on a config without
  // do_sample still takes its other fields, so they are read either way.
  params.temperature = metadata_bool(f, key::kGenerationDoSample).value_or(false)
                           ? metadata_float(f, key::kGenerationTemperature).value_or(1.0)
                           : 0.0;
  params.top_k = metadata_int(f, key::kGenerationTopK).value_or(50);
  params.top_p = metadata_float(f, key::kGenerationTopP).value_or(1.0);
  params.min_p = metadata_float(f, key::kGenerationMinP).value_or(0.0);
  params.repetition_penalty = metadata_float(f, key::kGenerationRepetitionPenalty).value_or(1.0);
  return params;
}

Result<SamplingParams> Engine::choose_sampling(const SamplingOverrides& given) const {
  return resolve_sampling(program_sampling_defaults(), given);
}

Result<std::shared_ptr<const CompiledGrammar>> Engine::compile_grammar(const GrammarSpec& spec) const {
  // A few schemas serve most requests; each compiled grammar holds its per-position token sets.
  constexpr size_t kRecentGrammars = 8;
  {
    std::lock_guard<std::mutex> lock(grammar_mutex_);
    for (auto it = recent_grammars_.begin(); it != recent_grammars_.end(); ++it) {
      if (it->first == spec) {
        recent_grammars_.splice(recent_grammars_.begin(), recent_grammars_, it);
        return recent_grammars_.front().second;
      }
    }
  }
  STATICLM_ASSIGN_OR_RETURN(std::shared_ptr<const TokenVocabulary> vocabulary, token_vocabulary());
  STATICLM_ASSIGN_OR_RETURN(std::shared_ptr<const CompiledGrammar> grammar, compile_grammar_spec(spec, vocabulary));
  std::lock_guard<std::mutex> lock(grammar_mutex_);
  recent_grammars_.emplace_front(spec, grammar);
  if (recent_grammars_.size() > kRecentGrammars) {
    recent_grammars_.pop_back();
  }
  return grammar;
}

Result<std::shared_ptr<const TokenVocabulary>> Engine::token_vocabulary() const {
  STATICLM_ASSIGN_OR_RETURN(const Tokenizer* tokenizer, this->tokenizer());
  std::lock_guard<std::mutex> lock(grammar_mutex_);
  if (!grammar_vocabulary_) {
    STATICLM_ASSIGN_OR_RETURN(grammar_vocabulary_, TokenVocabulary::build(*tokenizer));
  }
  return grammar_vocabulary_;
}

Result<GenerationResult> Engine::generate(LlmSession& session, std::string_view prompt,
                                          const GenerationOptions& options, const TextCallback& on_text) const {
  STATICLM_ASSIGN_OR_RETURN(const Tokenizer* tokenizer, this->tokenizer());
  return generate_text(session, *tokenizer, prompt, options, on_text);
}

Result<GenerationResult> Engine::generate(LlmSession& session, std::span<const int32_t> prompt_tokens,
                                          const GenerationOptions& options, const TextCallback& on_text) const {
  STATICLM_ASSIGN_OR_RETURN(const Tokenizer* tokenizer, this->tokenizer());
  return generate_text(session, *tokenizer, prompt_tokens, options, on_text);
}

}  // namespace staticlm
