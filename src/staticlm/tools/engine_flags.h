// SPDX-License-Identifier: Apache-2.0
// The flags every command that runs a program shares (--io-allocator, --strict-io, --threads,
// --runtime-option BACKEND.KEY=VALUE), turned into EngineOptions and an Engine over this build's
// registries (builtin/). The CLI holds no policy: the Engine chooses contracts, allocators and
// end-of-sequence ids. It adds its flag names to library messages that name a parameter.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include "staticlm/core/result.h"
#include "staticlm/llm/engine.h"
#include "staticlm/tools/flag_names.h"

namespace staticlm::cli {

struct EngineArgs {
  std::string path;
  std::string io_allocator;
  bool strict_io = false;
  int num_threads = 0;
  std::vector<std::string> runtime_options;  // BACKEND.KEY=VALUE
  bool verify = false;                       // check the program's bytes against its checksums first
};

void add_engine_flags(CLI::App& app, EngineArgs& args);

// --runtime-option entries ("cpu.isa=avx2") by backend id, for EngineOptions::backend_options and
// LoadOptions::backend_options. Fails with InvalidArgument naming an entry that is not
// BACKEND.KEY=VALUE.
Result<std::map<std::string, OptionMap, std::less<>>> parse_runtime_options(const std::vector<std::string>& given);

// Parses the runtime options and opens the program (Engine::open), on `thread_pool` when given.
Result<std::unique_ptr<Engine>> open_engine(const EngineArgs& args, std::shared_ptr<ThreadPool> thread_pool = nullptr);

}  // namespace staticlm::cli
