// SPDX-License-Identifier: Apache-2.0
// `staticlm export HF_DIR -o model.slm [...]`: a Hugging Face checkpoint to an hf_static v1
// program, with a progress bar on a terminal and a summary at the end. It partitions for the
// `cpu` backend unless `--backend NAME` names another (or `none`), with `--option key=value ...` /
// `--options FILE.json` (docs/backends.md); `--no-fallback` makes any node the backend does not take an error.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "staticlm/builtin/builtin_export.h"
#include "staticlm/exporter/hf_static_export.h"
#include "staticlm/tools/command.h"
#include "staticlm/tools/engine_flags.h"
#include "staticlm/tools/input_files.h"
#include "staticlm/tools/program_matrices.h"

namespace staticlm::cli {
namespace {

// `--backend none`: no delegates, every node on the portable reference kernels (the oracle).
constexpr std::string_view kNoBackend = "none";

// Not weight_dtype: --dtype's values are checked by the parser, and the name is also the cpu
// backend's option (--option weight_dtype=...), whose errors must not point at --dtype.
constexpr std::pair<std::string_view, std::string_view> kExportFlags[] = {
    {"prefill_len", "--prefill-len"}, {"max_cache_len", "--max-cache-len"}, {"cache_dtype", "--cache-dtype"},
    {"no_fallback", "--no-fallback"}, {"chat_template", "--chat-template"}, {"no_tokenizer", "--no-tokenizer"},
    {"embeddings", "--embeddings"}};

struct ExportArgs {
  std::string model_dir;
  std::string output;
  std::string dtype = "f32";
  int64_t prefill_len = 64;
  int64_t max_cache_len = 0;
  std::string cache_dtype = "f32";
  std::string kv_update = "in-place";
  std::string logits = "all";
  std::string embeddings;            // the pooling of an embeddings method; empty: none
  std::string backend = "cpu";       // the fast host backend; kNoBackend for the portable reference
  std::vector<std::string> options;  // key=value
  std::string options_file;
  bool no_fallback = false;
  std::string chat_template;
  bool no_tokenizer = false;
  std::string memory_budget;  // --memory-budget: a size the weights and caches should fit in
};

// A size as users write one: bytes, or a number with K, M, G or T (binary units; "MiB", "MB" and
// "M" alike, as llama.cpp reads them). InvalidArgument naming `flag` otherwise.
Result<uint64_t> parse_byte_size(std::string_view flag, std::string_view text) {
  size_t digits = 0;
  while (digits < text.size() && ((text[digits] >= '0' && text[digits] <= '9') || text[digits] == '.')) {
    ++digits;
  }
  std::string_view unit = text.substr(digits);
  double value = 0.0;
  const std::string number(text.substr(0, digits));
  char* end = nullptr;
  if (!number.empty()) {
    value = std::strtod(number.c_str(), &end);
  }
  if (number.empty() || end != number.c_str() + number.size()) {
    return invalid_argument(flag, " '", text, "': expected a size such as 512M, 1.5G or 800000000");
  }
  if (unit.ends_with("iB")) {
    unit.remove_suffix(2);
  } else if (unit.size() == 2 && unit.back() == 'B') {
    unit.remove_suffix(1);
  }
  double scale = 1.0;
  if (unit == "K" || unit == "k") {
    scale = 1024.0;
  } else if (unit == "M" || unit == "m") {
    scale = 1024.0 * 1024.0;
  } else if (unit == "G" || unit == "g") {
    scale = 1024.0 * 1024.0 * 1024.0;
  } else if (unit == "T" || unit == "t") {
    scale = 1024.0 * 1024.0 * 1024.0 * 1024.0;
  } else if (!unit.empty() && unit != "B") {
    return invalid_argument(flag, " '", text, "': unknown unit '", unit, "' (K, M, G or T)");
  }
  const double bytes = value * scale;
  if (!(bytes >= 1.0 && bytes < 1.8e19)) {
    return invalid_argument(flag, " '", text, "': expected a size of at least one byte");
  }
  return static_cast<uint64_t>(bytes);
}

// The untyped backend options: the file's, then the command line's (a key in both is refused).
Result<OptionMap> backend_options(const ExportArgs& args) {
  STATICLM_ASSIGN_OR_RETURN(OptionMap options, parse_option_assignments(args.options, "--option"));
  if (args.options_file.empty()) {
    return options;
  }
  STATICLM_ASSIGN_OR_RETURN(const std::string text, read_input_file("--options", args.options_file));
  STATICLM_ASSIGN_OR_RETURN(OptionMap from_file, parse_options_json(text, args.options_file));
  STATICLM_RETURN_IF_ERROR(merge_options(from_file, options));
  return from_file;
}

void draw_progress(const WriteProgress& progress) {
  const double fraction = progress.bytes_total == 0
                              ? 1.0
                              : static_cast<double>(progress.bytes_written) / static_cast<double>(progress.bytes_total);
  constexpr int kWidth = 40;
  const int filled = static_cast<int>(fraction * kWidth);
  std::string bar(static_cast<size_t>(filled), '#');
  bar.resize(kWidth, '.');
  std::fprintf(stderr, "\rwriting [%s] %3d%% %s / %s", bar.c_str(), static_cast<int>(fraction * 100.0),
               human_bytes(progress.bytes_written).c_str(), human_bytes(progress.bytes_total).c_str());
  if (progress.bytes_written >= progress.bytes_total) {
    std::fprintf(stderr, "\n");
  }
}

Status run_export(const ExportArgs& args) {
  std::optional<uint64_t> budget;
  if (!args.memory_budget.empty()) {
    STATICLM_ASSIGN_OR_RETURN(budget, parse_byte_size("--memory-budget", args.memory_budget));
  }
  HfStaticExportOptions options;
  STATICLM_ASSIGN_OR_RETURN(options.weight_dtype, parse_dtype(args.dtype));
  STATICLM_ASSIGN_OR_RETURN(options.cache_dtype, parse_dtype(args.cache_dtype));
  options.prefill_len = args.prefill_len;
  options.max_cache_len = args.max_cache_len;
  options.kv_update = args.kv_update == "returned" ? KvUpdateForm::kReturned : KvUpdateForm::kInPlace;
  options.logits = args.logits == "last" ? LogitsMode::kLast : LogitsMode::kAll;
  options.embedding_pooling = args.embeddings;
  options.chat_template_path = args.chat_template;
  options.no_tokenizer = args.no_tokenizer;
  if (isatty(STDERR_FILENO)) {
    options.on_progress = draw_progress;
  }
  BackendRegistry backends;
  if (args.backend != kNoBackend) {
    STATICLM_RETURN_IF_ERROR(register_builtin_backends(backends));
    STATICLM_ASSIGN_OR_RETURN(options.backend, backends.get(args.backend));
    STATICLM_ASSIGN_OR_RETURN(options.backend_options, backend_options(args));
    options.no_fallback = args.no_fallback;
  } else if (!args.options.empty() || !args.options_file.empty() || args.no_fallback) {
    return invalid_argument("--option, --options and --no-fallback need a delegate backend, not --backend ", kNoBackend,
                            " (see `staticlm backends`)");
  }
  const auto start = std::chrono::steady_clock::now();
  auto exported = export_hf_static(args.model_dir, args.output, options);
  if (!exported.ok()) {
    return with_flag_names(exported.status(), kExportFlags);
  }
  const HfStaticExportSummary& summary = *exported;
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("exported %s -> %s\n", summary.architecture.c_str(), args.output.c_str());
  std::printf(
      "  methods: prefill (chunk %lld), decode (1)%s; max cache length %lld\n",
      static_cast<long long>(summary.prefill_len),
      options.embedding_pooling.empty() ? "" : str_cat(", embeddings (chunk ", summary.prefill_len, ")").c_str(),
      static_cast<long long>(summary.max_cache_len));
  std::printf("  constants: %llu (%s); file %s; %.2f s\n", static_cast<unsigned long long>(summary.constant_count),
              human_bytes(summary.constant_bytes).c_str(), human_bytes(summary.file_bytes).c_str(), seconds);
  if (summary.named_data_count > 0) {
    std::printf("  named data: %llu (%s), stored once for every method's delegates\n",
                static_cast<unsigned long long>(summary.named_data_count),
                human_bytes(summary.named_data_bytes).c_str());
  }
  // What a device must hold to run it: the weights (mapped) and one session's KV caches.
  STATICLM_ASSIGN_OR_RETURN(std::unique_ptr<ProgramFile> written, ProgramFile::open(args.output));
  const uint64_t weights = program_weight_bytes(*written);
  const uint64_t caches = program_cache_bytes(*written);
  std::printf("  memory: weights %s, KV caches %s per session\n", human_bytes(weights).c_str(),
              human_bytes(caches).c_str());
  if (budget && weights + caches > *budget) {
    std::fprintf(stderr,
                 "warning: weights %s plus KV caches %s (%s) exceed --memory-budget %s: a smaller --dtype, "
                 "--max-cache-len or --cache-dtype f16 would fit more\n",
                 human_bytes(weights).c_str(), human_bytes(caches).c_str(), human_bytes(weights + caches).c_str(),
                 human_bytes(*budget).c_str());
  }
  std::printf("  embedded files: %s\n",
              summary.embedded_files.empty() ? "none" : join(summary.embedded_files, ", ").c_str());
  if (args.no_tokenizer) {
    std::printf("  tokenizer: none (--no-tokenizer): the program takes token ids only\n");
  }
  if (!summary.placement.backend.empty()) {
    std::vector<std::string> settings;
    for (const EffectiveOption& option : summary.backend_settings) {
      settings.push_back(option.name + "=" + option_value_string(option.value) + (option.given ? " (given)" : ""));
    }
    std::printf("  %s settings: %s\n", summary.placement.backend.c_str(), join(settings, ", ").c_str());
    std::printf("  placement: %s (`staticlm inspect` lists every node)\n", summary.placement.summary().c_str());
    if (const std::string formats = summary.placement.formats_summary(); !formats.empty()) {
      std::printf("  matrix formats: %s\n", formats.c_str());
    }
  }
  return ok_status();
}

}  // namespace

Command add_export_command(CLI::App& parent) {
  auto args = std::make_shared<ExportArgs>();
  CLI::App* app = parent.add_subcommand("export", "Export a Hugging Face checkpoint to an hf_static v1 program");
  app->add_option("model_dir", args->model_dir, "Checkpoint directory (config.json, *.safetensors, tokenizer)")
      ->required();
  app->add_option("-o,--output", args->output, "Program file to write (.slm)")->required();
  app->add_option("--dtype", args->dtype, "Weight dtype")
      ->check(CLI::IsMember({"f32", "f16", "bf16"}))
      ->capture_default_str();
  app->add_option("--prefill-len", args->prefill_len, "Tokens per prefill call")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20))
      ->capture_default_str();
  app->add_option("--max-cache-len", args->max_cache_len,
                  "KV cache length (default: min(max_position_embeddings, 2048))")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 24));
  app->add_option("--cache-dtype", args->cache_dtype,
                  "KV cache dtype (q8_0: int8 blocks of 32 with an f16 scale, in-place updates only)")
      ->check(CLI::IsMember({"f32", "f16", "q8_0"}))
      ->capture_default_str();
  app->add_option("--kv-update", args->kv_update, "How the program updates the KV caches")
      ->check(CLI::IsMember({"in-place", "returned"}))
      ->capture_default_str();
  app->add_option("--logits", args->logits, "Logits of every chunk position, or only the last")
      ->check(CLI::IsMember({"all", "last"}))
      ->capture_default_str();
  app->add_option("--embeddings", args->embeddings,
                  "Add an embeddings method (docs/embeddings.md) whose default pooling is mean or last")
      ->check(CLI::IsMember({"mean", "last"}));
  app->add_option("--backend", args->backend,
                  "Delegate backend to partition for (see `staticlm backends`); none = every node on the portable "
                  "reference kernels")
      ->capture_default_str();
  app->add_option("--chat-template", args->chat_template,
                  "Jinja chat template to embed, instead of the checkpoint's own (docs/chat.md)");
  app->add_flag("--no-tokenizer", args->no_tokenizer,
                "Export without a tokenizer: the program takes token ids only (otherwise a checkpoint without "
                "tokenizer.json or tokenizer.model is refused)");
  app->add_option("--option", args->options, "Backend option KEY=VALUE (repeatable)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app->add_option("--options", args->options_file, "JSON file of backend options");
  app->add_option("--memory-budget", args->memory_budget,
                  "Warn when the weights plus one session's KV caches exceed this size (e.g. 1.5G)");
  app->add_flag("--no-fallback", args->no_fallback, "Fail if any node would stay on the portable kernels");
  return {app, [args]() { return run_export(*args); }};
}

}  // namespace staticlm::cli
