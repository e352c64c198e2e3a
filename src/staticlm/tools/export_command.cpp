// SPDX-License-Identifier: Apache-2.0
// `staticlm export HF_DIR -o model.slm [...]`: a Hugging Face checkpoint to an hf_static v1
// program, with a progress bar on a terminal and a summary at the end. It partitions for the
// `cpu` backend unless `--backend NAME` names another (or `none`), with `--option key=value ...` /
// `--options FILE.json` (docs/backends.md); `--no-fallback` makes any node the backend does not take an error.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "staticlm/builtin/builtin_export.h"
#include "staticlm/exporter/hf_static_export.h"
#include "staticlm/tools/command.h"
#include "staticlm/tools/engine_flags.h"
#include "staticlm/tools/input_files.h"

namespace staticlm::cli {
namespace {

// `--backend none`: no delegates, every node on the portable reference kernels (the oracle).
constexpr std::string_view kNoBackend = "none";

// Not weight_dtype: --dtype's values are checked by the parser, and the name is also the cpu
// backend's option (--option weight_dtype=...), whose errors must not point at --dtype.
constexpr std::pair<std::string_view, std::string_view> kExportFlags[] = {
    {"prefill_len", "--prefill-len"}, {"max_cache_len", "--max-cache-len"}, {"cache_dtype", "--cache-dtype"},
    {"no_fallback", "--no-fallback"}, {"chat_template", "--chat-template"}, {"no_tokenizer", "--no-tokenizer"}};

struct ExportArgs {
  std::string model_dir;
  std::string output;
  std::string dtype = "f32";
  int64_t prefill_len = 64;
  int64_t max_cache_len = 0;
  std::string cache_dtype = "f32";
  std::string kv_update = "in-place";
  std::string logits = "all";
  std::string backend = "cpu";       // the fast host backend; kNoBackend for the portable reference
  std::vector<std::string> options;  // key=value
  std::string options_file;
  bool no_fallback = false;
  std::string chat_template;
  bool no_tokenizer = false;
};

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
  HfStaticExportOptions options;
  STATICLM_ASSIGN_OR_RETURN(options.weight_dtype, parse_dtype(args.dtype));
  STATICLM_ASSIGN_OR_RETURN(options.cache_dtype, parse_dtype(args.cache_dtype));
  options.prefill_len = args.prefill_len;
  options.max_cache_len = args.max_cache_len;
  options.kv_update = args.kv_update == "returned" ? KvUpdateForm::kReturned : KvUpdateForm::kInPlace;
  options.logits = args.logits == "last" ? LogitsMode::kLast : LogitsMode::kAll;
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
  std::printf("  methods: prefill (chunk %lld), decode (1); max cache length %lld\n",
              static_cast<long long>(summary.prefill_len), static_cast<long long>(summary.max_cache_len));
  std::printf("  constants: %llu (%s); file %s; %.2f s\n", static_cast<unsigned long long>(summary.constant_count),
              human_bytes(summary.constant_bytes).c_str(), human_bytes(summary.file_bytes).c_str(), seconds);
  if (summary.named_data_count > 0) {
    std::printf("  named data: %llu (%s), stored once for every method's delegates\n",
                static_cast<unsigned long long>(summary.named_data_count),
                human_bytes(summary.named_data_bytes).c_str());
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
  app->add_option("--cache-dtype", args->cache_dtype, "KV cache dtype")
      ->check(CLI::IsMember({"f32", "f16"}))
      ->capture_default_str();
  app->add_option("--kv-update", args->kv_update, "How the program updates the KV caches")
      ->check(CLI::IsMember({"in-place", "returned"}))
      ->capture_default_str();
  app->add_option("--logits", args->logits, "Logits of every chunk position, or only the last")
      ->check(CLI::IsMember({"all", "last"}))
      ->capture_default_str();
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
  app->add_flag("--no-fallback", args->no_fallback, "Fail if any node would stay on the portable kernels");
  return {app, [args]() { return run_export(*args); }};
}

}  // namespace staticlm::cli
