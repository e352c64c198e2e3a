// SPDX-License-Identifier: Apache-2.0
// What `staticlm run` parses, shared by the one-shot run (run_command.cpp) and the conversation
// mode (run_chat.cpp).
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "staticlm/tools/engine_flags.h"
#include "staticlm/tools/run_sampling.h"
#include "staticlm/tools/speculation_flags.h"

namespace staticlm::cli {

inline constexpr std::pair<std::string_view, std::string_view> kRunFlags[] = {
    {"max_new_tokens", "-n"}, {"temperature", "--temp"}, {"top_k", "--top-k"},
    {"top_p", "--top-p"},     {"min_p", "--min-p"},      {"repetition_penalty", "--repeat-penalty"}};

struct RunArgs {
  EngineArgs model;
  std::string prompt;
  std::string prompt_file;  // -f: the prompt read from a file
  int64_t max_new_tokens = 128;
  bool max_new_tokens_given = false;
  SamplingFlags sampling;
  std::vector<std::string> stop;
  bool quiet = false;
  bool chat = false;
  std::string system;
  std::string system_file;  // --system-file: the system message read from a file
  std::string chat_template;
  // Constrained output (docs/structured_output.md): at most one of these.
  std::string grammar_file;  // --grammar: a GBNF file
  std::string json_schema;   // --json-schema: a schema file, or the schema's JSON itself
  bool json = false;         // --json: any JSON object
  std::string prompt_cache;  // --prompt-cache: a session file of the prompt's cache
  SpeculationFlags speculation;
};

// The interactive conversation of `run --chat`: reads messages from stdin until /exit or the end
// of input.
Status run_chat(const RunArgs& args);

}  // namespace staticlm::cli
