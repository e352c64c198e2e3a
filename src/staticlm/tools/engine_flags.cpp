// SPDX-License-Identifier: Apache-2.0
#include "staticlm/tools/engine_flags.h"

#include <sched.h>

#include <cstdio>
#include <map>
#include <string>

#include "staticlm/builtin/builtin_runtime.h"

namespace staticlm::cli {
namespace {

// The CPUs in this process's affinity mask; 0 when it cannot be read.
int available_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  return sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : 0;
}

constexpr std::pair<std::string_view, std::string_view> kEngineFlags[] = {
    {"io_allocator", "--io-allocator"}, {"num_threads", "--threads"}, {"max_new_tokens", "-n"}};

}  // namespace

// "cpu.isa=avx2" -> {"cpu", "isa=avx2"}.
Result<std::map<std::string, OptionMap, std::less<>>> parse_runtime_options(const std::vector<std::string>& given) {
  std::map<std::string, std::vector<std::string>, std::less<>> by_backend;
  for (const std::string& entry : given) {
    const size_t dot = entry.find('.');
    const size_t equals = entry.find('=');
    if (dot == std::string::npos || dot == 0 || equals == std::string::npos || equals < dot) {
      return invalid_argument("--runtime-option '", entry, "': expected BACKEND.KEY=VALUE (e.g. cpu.isa=avx2)");
    }
    by_backend[entry.substr(0, dot)].push_back(entry.substr(dot + 1));
  }
  std::map<std::string, OptionMap, std::less<>> out;
  for (const auto& [backend, assignments] : by_backend) {
    STATICLM_ASSIGN_OR_RETURN(OptionMap options, parse_option_assignments(assignments, "--runtime-option"));
    out.emplace(backend, std::move(options));
  }
  return out;
}

void add_engine_flags(CLI::App& app, EngineArgs& args) {
  app.add_option("--io-allocator", args.io_allocator,
                 "I/O buffer allocator (default: the program's backend's preferred one, else heap)");
  app.add_flag("--strict-io", args.strict_io, "Fail instead of falling back to the heap");
  app.add_option("-t,--threads", args.num_threads,
                 "Threads, counting the caller's (0 = one per physical core; fast cores only on big.LITTLE)");
  app.add_option("--runtime-option", args.runtime_options,
                 "Backend runtime option BACKEND.KEY=VALUE, e.g. cpu.isa=avx2 (repeatable; see `staticlm backends`)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app.add_flag("--verify", args.verify,
               "Check every byte of the program against its recorded checksums before running (reads the whole file)");
}

Result<std::unique_ptr<Engine>> open_engine(const EngineArgs& args, std::shared_ptr<ThreadPool> thread_pool) {
  if (const int cpus = available_cpus(); cpus > 0 && args.num_threads > cpus) {
    std::fprintf(stderr,
                 "warning: --threads %d is more than the %d CPUs this process may run on: every op waits for its "
                 "slowest thread, so threads that share a CPU slow it down (0 picks one per fast physical core)\n",
                 args.num_threads, cpus);
  }
  EngineOptions options;
  options.io_allocator = args.io_allocator;
  options.strict_io = args.strict_io;
  options.num_threads = args.num_threads;
  options.thread_pool = std::move(thread_pool);
  STATICLM_ASSIGN_OR_RETURN(options.backend_options, parse_runtime_options(args.runtime_options));
  STATICLM_ASSIGN_OR_RETURN(EngineRuntime runtime, builtin_engine_runtime());
  auto engine = Engine::open(args.path, options, std::move(runtime));
  if (!engine.ok()) {
    return with_flag_names(engine.status(), kEngineFlags);
  }
  if (args.verify) {
    const Status verified = (*engine)->file().verify_contents();
    if (verified.code() == StatusCode::kFailedPrecondition) {
      std::fprintf(stderr, "note: %s\n", verified.message().c_str());  // an older file: say so, run it
    } else {
      STATICLM_RETURN_IF_ERROR(verified);
    }
  }
  return engine;
}

}  // namespace staticlm::cli
