// SPDX-License-Identifier: Apache-2.0
// `staticlm bench MODEL [-p 128] [-n 64] [-r 5] [--json]`: prefill and decode speed of a
// program beside what this machine allows, all measured in this run (the machine is shared and
// noisy, so ratios mean more than times): the read bandwidth and f32 FMA peak measured on the
// engine's own thread pool; decode as a fraction of the bandwidth roofline (weight bytes per
// token ÷ bandwidth) and the fixed cost per token left over; prefill as a fraction of the FMA
// peak; barriers per token; the load time (mapping, verifying and preparing the program and opening
// a session). The table at the end reads like llama-bench's (rows pp<P>, tg<N>).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "staticlm/backends/cpu/kernels/machine_peaks.h"
#include "staticlm/contracts/hf_static_v1_spec.h"
#include "staticlm/core/cpu_features.h"
#include "staticlm/core/cpu_topology.h"
#include "staticlm/core/emulation_signs.h"
#include "staticlm/format/metadata.h"
#include "staticlm/tools/bench_sample.h"
#include "staticlm/tools/bench_speculation.h"
#include "staticlm/tools/command.h"
#include "staticlm/tools/engine_flags.h"
#include "staticlm/tools/program_matrices.h"

namespace staticlm::cli {
namespace {

using json = nlohmann::json;

// The bandwidth probe's buffer: far above any last-level cache, and a shift that cannot overflow.
constexpr uint64_t kMaxProbeMib = 1 << 16;
// A cache-sized buffer is read in microseconds: more passes for a stable best.
constexpr int kCacheProbePasses = 20;

struct BenchArgs {
  EngineArgs model;
  int64_t prompt_tokens = 128;
  int64_t decode_tokens = 64;
  int repetitions = 5;
  int64_t short_prompt = 8;
  uint64_t probe_mib = 512;
  bool json_output = false;
  bool ops = false;  // time every kernel call, by op
};

// Ids spread over the vocabulary, none of them special in practice; the speed does not depend on
// which ids they are.
std::vector<int32_t> bench_prompt(int64_t length, int64_t vocab_size) {
  std::vector<int32_t> ids(static_cast<size_t>(length));
  for (int64_t i = 0; i < length; ++i) {
    ids[static_cast<size_t>(i)] = static_cast<int32_t>((1000 + i * 7919) % vocab_size);
  }
  return ids;
}

// What a decode step reads and a prefill computes: every constant and named data byte but the
// tables only gathered (an untied embedding reads one row per token; the formats the rest are
// stored in, the largest first), and one multiply-add per element of every matrix a linear kind
// reads, per row it multiplies: every token's row for the layers' matrices, the last row only for
// those of a program that keeps the last row's logits past its last attention.
struct StepWeights {
  uint64_t bytes = 0;
  double row_multiply_adds = 0.0;    // per prompt token: matrices applied to every row of a chunk
  double chunk_multiply_adds = 0.0;  // per prefill: matrices applied to fewer rows (the head, ...)
  double head_multiply_adds = 0.0;   // per token, of row_multiply_adds: a head applied to every row
  int64_t chunk_rows = 0;
  std::string formats;

  // Multiply-adds of a prefill of `tokens` tokens through `layers` layers, as generation runs it
  // (the last token's logits alone). The matrices applied to fewer rows (a `--logits last`
  // program's head, and its last layer's after attention, which the exporter narrows to the last
  // row) run for the prompt's last chunk only: the chunks before it compute no logits. A program
  // that keeps every position's logits is narrowed at run time instead: its head multiplies the
  // last row once, and its last layer after attention that row of the last chunk and none of the
  // others, taken off here as the whole layer for every token but the last (its q / k / v still
  // run, so the count is a little low; kernels that compute padding rows anyway, the portable
  // backend's, do more than it counts).
  double prefill_multiply_adds(int64_t tokens, int64_t layers) const {
    const auto n = static_cast<double>(tokens);
    if (head_multiply_adds <= 0.0 || layers <= 0 || tokens <= 0) {
      return row_multiply_adds * n + (tokens > 0 ? chunk_multiply_adds : 0.0);
    }
    const double body = row_multiply_adds - head_multiply_adds;
    return body * n - body / static_cast<double>(layers) * (n - 1.0) + head_multiply_adds;
  }
};

// `vocab_size`: a matrix of that many rows applied to every row of a chunk is the head of a
// program that keeps every position's logits.
StepWeights step_weights(const ProgramFile& file, int64_t vocab_size) {
  StepWeights step;
  const fb::Program& program = file.program();
  if (program.constants() != nullptr) {
    for (const fb::Constant* constant : *program.constants()) {
      step.bytes += constant->size();
    }
  }
  if (program.named_data() != nullptr) {
    for (const fb::NamedData* entry : *program.named_data()) {
      step.bytes += file.segment(entry->segment()).size();
    }
  }
  std::map<std::string, uint64_t> by_format;
  const std::vector<ProgramMatrix> matrices = program_matrices(file);
  for (const ProgramMatrix& matrix : matrices) {
    if (!matrix.gathered_only()) {
      step.chunk_rows = std::max(step.chunk_rows, matrix.rows);
    }
  }
  for (const ProgramMatrix& matrix : matrices) {
    if (matrix.gathered_only()) {
      step.bytes -= std::min(step.bytes, matrix.bytes);
      continue;
    }
    const auto elements = static_cast<double>(num_elements(matrix.shape));
    if (matrix.rows == step.chunk_rows) {
      step.row_multiply_adds += elements;
      if (!matrix.shape.empty() && matrix.shape[0] == vocab_size) {
        step.head_multiply_adds += elements;
      }
    } else {
      step.chunk_multiply_adds += elements * static_cast<double>(matrix.rows);
    }
    by_format[matrix.format] += matrix.bytes;
  }
  std::vector<std::pair<uint64_t, std::string>> ordered;
  for (const auto& [format, bytes] : by_format) {
    ordered.emplace_back(bytes, format);
  }
  std::sort(ordered.rbegin(), ordered.rend());
  for (const auto& [bytes, format] : ordered) {
    step.formats += (step.formats.empty() ? "" : " + ") + format;
  }
  return step;
}

// The kernel time of the timed runs by op and chunk rows (a pp run's chunks, the tg run's short
// prompt and its one-row steps), per run, and each op's share of its rows' kernel time.
json ops_json(std::vector<OpProfile::Entry> entries, int repetitions) {
  // The prefill chunks' rows first, then the decode steps', each the most time first.
  std::stable_sort(entries.begin(), entries.end(),
                   [](const OpProfile::Entry& a, const OpProfile::Entry& b) { return a.rows > b.rows; });
  std::map<int64_t, double> by_rows;
  for (const OpProfile::Entry& e : entries) {
    by_rows[e.rows] += e.seconds;
  }
  json out = json::array();
  for (const OpProfile::Entry& e : entries) {
    out.push_back({{"op", e.op},
                   {"rows", e.rows},
                   {"calls_per_run", static_cast<double>(e.calls) / repetitions},
                   {"ms_per_run", e.seconds / repetitions * 1e3},
                   {"share_of_rows", by_rows[e.rows] > 0.0 ? e.seconds / by_rows[e.rows] : 0.0}});
  }
  return out;
}

void print_ops(const json& ops) {
  std::printf("\nkernel time by op, per run (rows: the chunk's; 1: a decode step)\n");
  std::printf("| %-16s | %5s | %9s | %10s | %6s |\n", "op", "rows", "calls", "ms", "share");
  std::printf("| %-16s | %5s | %9s | %10s | %6s |\n", "----------------", "----:", "--------:", "---------:", "-----:");
  for (const json& e : ops) {
    std::printf("| %-16s | %5lld | %9.1f | %10.3f | %5.1f%% |\n", e["op"].get<std::string>().c_str(),
                static_cast<long long>(e["rows"].get<int64_t>()), e["calls_per_run"].get<double>(),
                e["ms_per_run"].get<double>(), 100.0 * e["share_of_rows"].get<double>());
  }
}

// The features the probes may use: the cpu backend's isa cap where `--runtime-option cpu.isa=...`
// sets one (the engine has validated it), so that a capped run's fractions are of the capped
// machine's peaks, as its kernels see them.
Result<CpuFeatures> isa_capped_features(const std::vector<std::string>& runtime_options) {
  constexpr std::string_view kIsa = "cpu.isa=";
  CpuFeatures features = CpuFeatures::host();
  for (const std::string& option : runtime_options) {
    if (std::string_view(option).starts_with(kIsa)) {
      STATICLM_ASSIGN_OR_RETURN(features, cpu_features_for_isa(std::string_view(option).substr(kIsa.size())));
    }
  }
  return features;
}

void progress(bool enabled, const std::string& line) {
  if (enabled) {
    std::fprintf(stderr, "\r%-72s", line.c_str());
    std::fflush(stderr);
  }
}

Status run_bench(const BenchArgs& args) {
  if (args.prompt_tokens < 1 || args.decode_tokens < 1 || args.repetitions < 1 || args.short_prompt < 1) {
    return invalid_argument("-p, -n, -r and --short-prompt must be at least 1, found ", args.prompt_tokens, ", ",
                            args.decode_tokens, ", ", args.repetitions, " and ", args.short_prompt);
  }
  if (args.probe_mib < 1 || args.probe_mib > kMaxProbeMib) {
    return invalid_argument("--probe-mib must be in [1, ", kMaxProbeMib, "], found ", args.probe_mib);
  }
  const auto load_start = std::chrono::steady_clock::now();
  STATICLM_ASSIGN_OR_RETURN(std::unique_ptr<Engine> engine, open_engine(args.model));
  STATICLM_ASSIGN_OR_RETURN(hf_static_v1::Config config, hf_static_v1::Config::from_program(engine->file()));
  const int64_t longest = std::max(args.prompt_tokens, args.short_prompt + args.decode_tokens);
  if (longest + 1 > config.max_cache_len) {
    return out_of_range("the benchmark needs ", longest + 1, " cache slots (-p ", args.prompt_tokens, ", -n ",
                        args.decode_tokens, "), the program has max_cache_len ", config.max_cache_len);
  }
  STATICLM_ASSIGN_OR_RETURN(std::string weight_dtype, metadata_string(engine->file(), hf_static_v1::key::kWeightDtype));
  const StepWeights step = step_weights(engine->file(), config.vocab_size);
  OpProfile op_profile;
  STATICLM_ASSIGN_OR_RETURN(std::unique_ptr<LlmSession> session, engine->new_session(args.ops ? &op_profile : nullptr));
  const double load_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - load_start).count();
  STATICLM_ASSIGN_OR_RETURN(const CpuFeatures probe_features, isa_capped_features(args.model.runtime_options));
  ThreadPool& pool = engine->program()->thread_pool();
  const bool show = !args.json_output;
  const std::string emulated = host_emulation_sign();
  if (!emulated.empty()) {
    std::fprintf(stderr,
                 "staticlm bench: warning: this CPU looks emulated (%s): the times below are the emulator's, not "
                 "an ARM CPU's\n",
                 emulated.c_str());
  }

  // The probes run before and after the timed runs and the best counts: the machine's bandwidth
  // drifts, and the best is what the runs could have had.
  progress(show, "measuring read bandwidth and FMA peak ...");
  STATICLM_ASSIGN_OR_RETURN(double bandwidth,
                            cpu::measure_read_bandwidth(pool, probe_features, args.probe_mib << 20, 3));
  double fma_peak = cpu::measure_fma_peak(pool, probe_features, 3);

  GenerationOptions options;  // greedy, no end of sequence: every run does the same work
  const std::vector<int32_t> prompt = bench_prompt(args.prompt_tokens, config.vocab_size);
  const std::vector<int32_t> short_prompt = bench_prompt(args.short_prompt, config.vocab_size);

  progress(show, "warming up ...");
  options.max_new_tokens = 2;
  STATICLM_RETURN_IF_ERROR(generate_tokens(*session, short_prompt, options).status());
  // The short prompt's own prefill barriers, taken off the decode runs' count below.
  options.max_new_tokens = 1;
  const uint64_t before_prefill = pool.barriers();
  STATICLM_RETURN_IF_ERROR(generate_tokens(*session, short_prompt, options).status());
  const uint64_t short_prefill_barriers = pool.barriers() - before_prefill;
  op_profile.clear();  // the timed runs only

  std::vector<double> prefill_rates;
  std::vector<double> decode_rates;
  std::vector<double> ttfts;
  uint64_t decode_barriers = 0;
  int64_t decode_steps = 0;
  for (int r = 0; r < args.repetitions; ++r) {
    progress(show, str_cat("pp", args.prompt_tokens, " run ", r + 1, "/", args.repetitions));
    options.max_new_tokens = 1;
    STATICLM_ASSIGN_OR_RETURN(GenerationResult prefill, generate_tokens(*session, prompt, options));
    prefill_rates.push_back(static_cast<double>(args.prompt_tokens) / prefill.prefill_seconds);

    progress(show, str_cat("tg", args.decode_tokens, " run ", r + 1, "/", args.repetitions));
    options.max_new_tokens = args.decode_tokens + 1;  // the first token comes from the prefill
    const uint64_t barriers_before = pool.barriers();
    STATICLM_ASSIGN_OR_RETURN(GenerationResult decode, generate_tokens(*session, short_prompt, options));
    decode_barriers += pool.barriers() - barriers_before - short_prefill_barriers;
    decode_steps += decode.decode_steps;
    decode_rates.push_back(static_cast<double>(decode.decode_steps) / decode.decode_seconds);
    ttfts.push_back(decode.time_to_first_token_seconds);
  }
  progress(show, "measuring read bandwidth and FMA peak again ...");
  STATICLM_ASSIGN_OR_RETURN(double bandwidth_after,
                            cpu::measure_read_bandwidth(pool, probe_features, args.probe_mib << 20, 3));
  bandwidth = std::max(bandwidth, bandwidth_after);
  fma_peak = std::max(fma_peak, cpu::measure_fma_peak(pool, probe_features, 3));
  progress(show, "");
  if (show) {
    std::fprintf(stderr, "\r");
  }

  const Sample pp = summarize(prefill_rates);
  const Sample tg = summarize(decode_rates);
  const Sample ttft = summarize(ttfts);
  const uint64_t bytes = step.bytes;
  // Weights that fit in the last-level cache are read from it, not from memory, at several times
  // the memory's bandwidth: the roofline is then the cache's, measured over a buffer their size.
  const uint64_t cache_bytes = last_level_cache_bytes();
  const bool weights_in_cache = cache_bytes > 0 && bytes <= cache_bytes;
  double roofline_bandwidth = bandwidth;
  if (weights_in_cache) {
    STATICLM_ASSIGN_OR_RETURN(roofline_bandwidth,
                              cpu::measure_read_bandwidth(pool, probe_features, bytes, kCacheProbePasses));
  }
  const double roofline_seconds = static_cast<double>(bytes) / roofline_bandwidth;
  const double token_seconds = 1.0 / tg.mean;
  // Two flops per multiply-add a linear does (attention's own flops are left out).
  const double flops_per_token =
      2.0 * step.prefill_multiply_adds(args.prompt_tokens, config.num_layers) / static_cast<double>(args.prompt_tokens);
  const double barriers_per_token =
      decode_steps > 0 ? static_cast<double>(decode_barriers) / static_cast<double>(decode_steps) : 0.0;

  json doc = {
      {"model", args.model.path},
      {"weight_dtype", weight_dtype},
      {"weight_formats", step.formats},
      {"threads", pool.num_threads()},
      {"threads_chosen_by", args.model.num_threads > 0 ? "-t" : describe_core_choice(default_cores())},
      {"weight_bytes", bytes},
      {"read_bandwidth_gbs", bandwidth / 1e9},
      {"last_level_cache_bytes", cache_bytes},
      {"fma_peak_gflops", fma_peak / 1e9},
      {"probe_features", probe_features.to_string()},
      {"emulated", emulated.empty() ? json(nullptr) : json(emulated)},
      {"prefill",
       {{"tokens", args.prompt_tokens},
        {"tokens_per_s", pp.mean},
        {"sd", pp.sd},
        {"multiply_adds_per_token", flops_per_token / 2.0},
        {"fma_peak_fraction", pp.mean * flops_per_token / fma_peak}}},
      {"decode",
       {{"tokens", args.decode_tokens},
        {"tokens_per_s", tg.mean},
        {"sd", tg.sd},
        {"roofline", weights_in_cache ? "last-level cache" : "memory"},
        {"roofline_read_bandwidth_gbs", roofline_bandwidth / 1e9},
        {"roofline_tokens_per_s", 1.0 / roofline_seconds},
        {"roofline_fraction", roofline_seconds / token_seconds},
        {"fixed_cost_ms", (token_seconds - roofline_seconds) * 1e3},
        {"barriers_per_token", barriers_per_token}}},
      {"load_s", load_seconds},
      {"time_to_first_token_s", {{"prompt_tokens", args.short_prompt}, {"mean", ttft.mean}, {"sd", ttft.sd}}},
      {"repetitions", args.repetitions},
  };
  if (args.ops) {
    doc["ops"] = ops_json(op_profile.entries(), args.repetitions);
  }
  if (args.json_output) {
    std::printf("%s\n", doc.dump(2).c_str());
    return ok_status();
  }
  std::printf("model: %s (%s weights, %s streamed per token)\n", args.model.path.c_str(), step.formats.c_str(),
              human_bytes(bytes).c_str());
  std::printf("threads: %s\n",
              args.model.num_threads > 0
                  ? str_cat(pool.num_threads(), " (-t)").c_str()
                  : str_cat(describe_core_choice(default_cores()), " (the default; -t sets another)").c_str());
  std::printf("machine: read bandwidth %.1f GB/s, f32 FMA peak %.1f GFLOP/s (measured now, with %s)\n", bandwidth / 1e9,
              fma_peak / 1e9, probe_features.to_string().c_str());
  if (weights_in_cache) {
    std::printf(
        "decode: the weights fit in the %s last-level cache, so the roofline is the cache's read bandwidth, "
        "%.1f GB/s over a buffer of their size (memory's would overstate the fraction)\n",
        human_bytes(cache_bytes).c_str(), roofline_bandwidth / 1e9);
  }
  std::printf("decode: %.3f of the %sroofline (%.1f tok/s), fixed cost %.2f ms/token, %.1f barriers/token\n",
              roofline_seconds / token_seconds, weights_in_cache ? "cache " : "", 1.0 / roofline_seconds,
              (token_seconds - roofline_seconds) * 1e3, barriers_per_token);
  std::printf("prefill: %.3f of the FMA peak; time to first token (%lld-token prompt) %.1f ± %.1f ms\n",
              pp.mean * flops_per_token / fma_peak, static_cast<long long>(args.short_prompt), ttft.mean * 1e3,
              ttft.sd * 1e3);
  std::printf("load: %.3f s (map, verify, prepare, open a session)\n\n", load_seconds);
  std::printf("| %-8s | %7s | %18s |\n", "test", "threads", "t/s");
  std::printf("| %-8s | %7s | %18s |\n", "--------", "------:", "-----------------:");
  std::printf("| %-8s | %7d | %10.2f ± %5.2f |\n", str_cat("pp", args.prompt_tokens).c_str(), pool.num_threads(),
              pp.mean, pp.sd);
  std::printf("| %-8s | %7d | %10.2f ± %5.2f |\n", str_cat("tg", args.decode_tokens).c_str(), pool.num_threads(),
              tg.mean, tg.sd);
  if (args.ops) {
    print_ops(doc["ops"]);
  }
  return ok_status();
}

}  // namespace

Command add_bench_command(CLI::App& parent) {
  auto args = std::make_shared<BenchArgs>();
  CLI::App* app = parent.add_subcommand("bench", "Prefill and decode speed against this machine's measured limits");
  app->add_option("model", args->model.path, "Program file (.slm)")->required();
  app->add_option("-p,--prompt-tokens", args->prompt_tokens, "Prompt length of the prefill test (pp)")
      ->capture_default_str();
  app->add_option("-n,--decode-tokens", args->decode_tokens, "Tokens of the decode test (tg)")->capture_default_str();
  app->add_option("-r,--repetitions", args->repetitions, "Timed runs of each test, after a warm-up")
      ->capture_default_str();
  app->add_option("--short-prompt", args->short_prompt, "Prompt length for time to first token")->capture_default_str();
  app->add_option("--probe-mib", args->probe_mib, "Buffer of the read-bandwidth probe (MiB)")->capture_default_str();
  app->add_flag("--json", args->json_output, "Print the results as JSON");
  app->add_flag("--ops", args->ops,
                "Time every kernel call and report where the time goes, by op and by the rows of the chunk "
                "(a clock read per call)");
  add_engine_flags(*app, args->model);
  auto speculation = std::make_shared<SpeculationBenchArgs>();
  add_speculation_flags(*app, speculation->speculation);
  app->add_option("-f,--file", speculation->prompt_file,
                  "With --lookup / --draft: the prompt whose continuation is decoded with and without speculation");
  app->add_option("--temp", speculation->temperature,
                  "With --lookup / --draft: sample at this temperature (one seed both ways) instead of greedy");
  return {app, [args, speculation]() {
            if (speculation->speculation.lookup == 0 && speculation->speculation.draft.empty()) {
              if (!speculation->prompt_file.empty() || speculation->temperature != 0.0) {
                return invalid_argument("-f/--file and --temp belong to a --lookup or --draft benchmark");
              }
              return run_bench(*args);
            }
            speculation->model = args->model;
            speculation->decode_tokens = args->decode_tokens;
            speculation->repetitions = args->repetitions;
            speculation->json_output = args->json_output;
            return run_speculation_bench(*speculation);
          }};
}

}  // namespace staticlm::cli
