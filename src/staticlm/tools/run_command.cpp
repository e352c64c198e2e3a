// SPDX-License-Identifier: Apache-2.0
// `staticlm run MODEL -p PROMPT [...]`: streams generated text to stdout and the run
// statistics to stderr; `--chat` holds a conversation instead (run_chat.cpp).
#include <chrono>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "staticlm/llm/session_file.h"
#include "staticlm/tools/command.h"
#include "staticlm/tools/engine_flags.h"
#include "staticlm/tools/input_files.h"
#include "staticlm/tools/program_matrices.h"
#include "staticlm/tools/run_args.h"

namespace staticlm::cli {
namespace {

// `load_seconds`: opening the engine and its session, everything before the first token is fed.
void print_stats(const Engine& engine, double load_seconds, const GenerationResult& result, const RunArgs& args,
                 const GenerationOptions& options) {
  const SamplingParams& sampling = options.sampling;
  const double prefill_rate =
      result.prefill_seconds > 0 ? static_cast<double>(result.prompt_tokens.size()) / result.prefill_seconds : 0.0;
  const double decode_rate =
      result.decode_seconds > 0 ? static_cast<double>(result.decode_steps) / result.decode_seconds : 0.0;
  const bool cut_short = result.grammar_complete.has_value() && !*result.grammar_complete;
  std::fprintf(stderr, "\n--- %s%s ---\n", stop_reason_name(result.stop_reason).data(),
               cut_short ? ": the output is incomplete, the grammar needed more tokens" : "");
  std::fprintf(stderr, "load: %.3f s (contract %s v%lld)\n", load_seconds, engine.contract().name().data(),
               static_cast<long long>(engine.contract().version()));
  std::fprintf(stderr, "prompt: %zu tokens, prefill %.1f tok/s, time to first token %.3f s\n",
               result.prompt_tokens.size(), prefill_rate, result.time_to_first_token_seconds);
  std::fprintf(stderr, "generated: %zu tokens, decode %.1f tok/s\n", result.tokens.size(), decode_rate);
  print_sampling(stderr, sampling, args.sampling);
  print_speculation_stats(stderr, result.speculation, options.speculation);
  std::fprintf(stderr, "peak RSS: %s\n", human_bytes(result.peak_rss_bytes).c_str());
  std::string usage;
  for (const AllocatorUsage& entry : result.io.per_allocator) {
    usage += str_cat(usage.empty() ? "" : ", ", entry.allocator, " ", entry.buffers, " buffers / ",
                     human_bytes(entry.bytes));
  }
  std::fprintf(stderr, "I/O buffers: %s; heap fallbacks: %llu (%s)\n", usage.c_str(),
               static_cast<unsigned long long>(result.io.fallbacks), human_bytes(result.io.fallback_bytes).c_str());
  std::fprintf(stderr, "memory: weights %s (mapped from the file), KV caches %s (of the I/O buffers)\n",
               human_bytes(program_weight_bytes(engine.file())).c_str(), human_bytes(result.io.cache_bytes).c_str());
}

// Prompts and system messages larger than this are not what a context holds.
constexpr uint64_t kMaxPromptFileBytes = 64 << 20;
constexpr uint64_t kMaxChatTemplateBytes = 16 << 20;

// -f and --system-file become the text they name, read through the checked path every flag's file
// takes; --chat-template is checked the same way before the program is opened.
Status read_run_files(RunArgs& args) {
  if (!args.prompt_file.empty()) {
    if (!args.prompt.empty()) {
      return invalid_argument("give -p/--prompt or -f/--file, not both");
    }
    STATICLM_ASSIGN_OR_RETURN(args.prompt, read_input_file("--file", args.prompt_file, kMaxPromptFileBytes));
    if (args.prompt.empty()) {
      return invalid_argument("--file '", args.prompt_file, "': the file is empty");
    }
  }
  if (!args.system_file.empty()) {
    if (!args.system.empty()) {
      return invalid_argument("give --system or --system-file, not both");
    }
    STATICLM_ASSIGN_OR_RETURN(args.system, read_input_file("--system-file", args.system_file, kMaxPromptFileBytes));
  }
  if (!args.chat_template.empty()) {
    STATICLM_RETURN_IF_ERROR(read_input_file("--chat-template", args.chat_template, kMaxChatTemplateBytes).status());
  }
  return ok_status();
}

// Grammars and schemas larger than this are not what a generation is constrained with.
constexpr uint64_t kMaxGrammarFileBytes = 4 << 20;

// What --grammar, --json-schema or --json asks for; nullopt when none is given.
Result<std::optional<GrammarSpec>> grammar_spec(const RunArgs& args) {
  const int given = (args.grammar_file.empty() ? 0 : 1) + (args.json_schema.empty() ? 0 : 1) + (args.json ? 1 : 0);
  if (given == 0) {
    return std::optional<GrammarSpec>();
  }
  if (given > 1) {
    return invalid_argument("give one of --grammar, --json-schema and --json");
  }
  GrammarSpec spec;
  if (args.json) {
    spec.kind = GrammarSpec::Kind::kJsonObject;
  } else if (!args.grammar_file.empty()) {
    spec.kind = GrammarSpec::Kind::kGbnf;
    STATICLM_ASSIGN_OR_RETURN(spec.text, read_input_file("--grammar", args.grammar_file, kMaxGrammarFileBytes));
  } else {
    spec.kind = GrammarSpec::Kind::kJsonSchema;
    // The schema itself when it looks like JSON, else a file holding it.
    const size_t first = args.json_schema.find_first_not_of(" \t\r\n");
    const bool inline_json =
        first != std::string::npos && (args.json_schema[first] == '{' || args.json_schema == "true");
    if (inline_json) {
      spec.text = args.json_schema;
    } else {
      STATICLM_ASSIGN_OR_RETURN(spec.text, read_input_file("--json-schema", args.json_schema, kMaxGrammarFileBytes));
    }
  }
  return std::optional<GrammarSpec>(std::move(spec));
}

Status run_generation(const RunArgs& args) {
  STATICLM_ASSIGN_OR_RETURN(const std::optional<GrammarSpec> grammar, grammar_spec(args));
  if (args.chat) {
    if (grammar) {
      return invalid_argument("--grammar, --json-schema and --json constrain a one-shot run, not --chat");
    }
    if (!args.prompt_cache.empty()) {
      return invalid_argument("--prompt-cache keeps a one-shot run's prompt, not --chat's conversation");
    }
    return run_chat(args);
  }
  if (args.prompt.empty()) {
    return invalid_argument("-p/--prompt or -f/--file is required (or --chat for a conversation)");
  }
  if (!args.system.empty() || !args.chat_template.empty()) {
    return invalid_argument("--system, --system-file and --chat-template apply to --chat");
  }
  const auto start = std::chrono::steady_clock::now();
  STATICLM_ASSIGN_OR_RETURN(std::unique_ptr<Engine> engine, open_engine(args.model));
  STATICLM_ASSIGN_OR_RETURN(std::unique_ptr<LlmSession> session, engine->new_session());
  STATICLM_ASSIGN_OR_RETURN(Speculation speculation, open_speculation(args.speculation, args.model, *engine));
  std::unique_ptr<LlmSession> draft_session;
  if (speculation.draft) {
    STATICLM_ASSIGN_OR_RETURN(draft_session, speculation.draft->new_session());
    speculation.options.draft = draft_session.get();
  }
  const double load_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  GenerationOptions options = engine->default_generation();
  STATICLM_ASSIGN_OR_RETURN(options.sampling, choose_sampling(*engine, args.sampling));
  options.max_new_tokens = args.max_new_tokens;
  // The default length is a guess, so a long prompt gets what fits; an -n the user chose that
  // cannot fit is refused before any work.
  options.stop_at_context_end = !args.max_new_tokens_given;
  options.stop_strings = args.stop;
  options.speculation = speculation.options;
  if (grammar) {
    const char* flag = grammar->kind == GrammarSpec::Kind::kGbnf         ? "--grammar"
                       : grammar->kind == GrammarSpec::Kind::kJsonSchema ? "--json-schema"
                                                                         : "--json";
    auto compiled = engine->compile_grammar(*grammar);
    if (!compiled.ok()) {
      return compiled.status().with_context(flag);
    }
    options.grammar = std::move(compiled).value();
  }
  // A prompt cache from an earlier run: its tokens that the prompt starts with are not prefilled.
  bool restored = false;
  if (!args.prompt_cache.empty()) {
    const Status status = restore_session_file(*session, engine->file(), args.prompt_cache);
    if (!status.ok() && status.code() != StatusCode::kNotFound) {
      return status.with_context("--prompt-cache");
    }
    restored = status.ok();
    options.reuse_cached_prefix = true;
  }
  auto result = engine->generate(*session, args.prompt, options, [](std::string_view text) {
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
  });
  std::fputc('\n', stdout);
  if (!result.ok()) {
    return with_flag_names(result.status(), kRunFlags);
  }
  const auto prompt_len = static_cast<int64_t>(result->prompt_tokens.size());
  // The prompt's part of the cache is kept; rewritten when this prompt prefilled what the file
  // lacked (the last prompt token is always fed again, for its logits).
  const bool save = !args.prompt_cache.empty() && (!restored || result->cached_prompt_tokens + 1 < prompt_len);
  if (save) {
    session->truncate(prompt_len);
    STATICLM_RETURN_IF_ERROR(
        save_session_file(*session, engine->file(), args.prompt_cache).with_context("--prompt-cache"));
  }
  if (!args.quiet) {
    print_stats(*engine, load_seconds, *result, args, options);
    if (!args.prompt_cache.empty()) {
      std::fprintf(stderr, "prompt cache: %lld of %lld prompt tokens reused from '%s'%s\n",
                   static_cast<long long>(result->cached_prompt_tokens), static_cast<long long>(prompt_len),
                   args.prompt_cache.c_str(), save ? "; the prompt's cache saved to it" : "");
    }
  }
  return ok_status();
}

}  // namespace

Command add_run_command(CLI::App& parent) {
  auto args = std::make_shared<RunArgs>();
  CLI::App* app = parent.add_subcommand("run", "Generate text from a prompt (text to stdout, stats to stderr)");
  app->add_option("model", args->model.path, "Program file (.slm)")->required();
  app->add_option("-p,--prompt", args->prompt, "Prompt text");
  app->add_option("-f,--file", args->prompt_file, "Read the prompt from a file (as it is, newlines included)");
  app->add_flag("--chat", args->chat,
                "Hold a conversation: messages from stdin, the model's chat template; /help lists the commands");
  app->add_option("--system", args->system, "System message leading the conversation (--chat)");
  app->add_option("--system-file", args->system_file, "Read the system message from a file (--chat)");
  app->add_option("--chat-template", args->chat_template,
                  "Jinja chat template to use instead of the program's (--chat; docs/chat.md)");
  CLI::Option* max_new = app->add_option("-n,--max-new-tokens", args->max_new_tokens,
                                         "Tokens to generate at most (fewer where the context ends first); --chat: "
                                         "per reply, default a quarter of the context")
                             ->capture_default_str();
  add_sampling_flags(*app, args->sampling);
  app->add_option("--stop", args->stop, "Stop before this text (repeatable)");
  app->add_option("--prompt-cache", args->prompt_cache,
                  "Keep the prompt's cache in this file and reuse it on the next run whose prompt starts the same "
                  "(made on first use; bound to this program)");
  app->add_option("--grammar", args->grammar_file, "Constrain the output to a GBNF grammar in this file");
  app->add_option("--json-schema", args->json_schema,
                  "Constrain the output to JSON valid under this JSON Schema (a file, or the schema itself)");
  app->add_flag("--json", args->json, "Constrain the output to a JSON object");
  add_speculation_flags(*app, args->speculation);
  add_engine_flags(*app, args->model);
  app->add_flag("-q,--quiet", args->quiet, "Do not print statistics");
  return {app, [args, max_new]() {
            args->max_new_tokens_given = max_new->count() > 0;
            STATICLM_RETURN_IF_ERROR(read_run_files(*args));
            return run_generation(*args);
          }};
}

}  // namespace staticlm::cli
