// SPDX-License-Identifier: Apache-2.0
// How a CLI subcommand plugs into `staticlm`: each command file adds its CLI11 subcommand and
// returns the function that runs it once arguments are parsed. Commands parse arguments into
// typed option structs and call library code; they print results to stdout and return a Status
// that main turns into one line on stderr and a non-zero exit.
#pragma once

#include <functional>

#include <CLI/CLI.hpp>

#include "staticlm/core/status.h"

namespace staticlm::cli {

using CommandRunner = std::function<Status()>;

struct Command {
  CLI::App* app = nullptr;
  CommandRunner run;
};

Command add_inspect_command(CLI::App& parent);
Command add_backends_command(CLI::App& parent);
Command add_bench_command(CLI::App& parent);
Command add_embed_command(CLI::App& parent);
Command add_eval_command(CLI::App& parent);
Command add_export_command(CLI::App& parent);
Command add_logits_command(CLI::App& parent);
Command add_run_command(CLI::App& parent);
Command add_serve_command(CLI::App& parent);
Command add_tokenize_command(CLI::App& parent);

// "1.5 MiB", "312 B".
std::string human_bytes(uint64_t bytes);

}  // namespace staticlm::cli
