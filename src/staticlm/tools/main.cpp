// SPDX-License-Identifier: Apache-2.0
// staticlm: the command-line front end, export and run. Thin by design: parse, call the
// library, report.
#include "staticlm/tools/cli_main.h"

int main(int argc, char** argv) {
  using namespace staticlm::cli;
  return run_cli(argc, argv, "staticlm", "staticlm: export Hugging Face LLMs to static-shape programs and run them",
                 {add_backends_command, add_bench_command, add_embed_command, add_eval_command, add_export_command,
                  add_inspect_command, add_logits_command, add_run_command, add_serve_command, add_tokenize_command});
}
