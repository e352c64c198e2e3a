// SPDX-License-Identifier: Apache-2.0
// staticlm-run: the on-device runner. It links the runtime, the LLM runner and the run side of
// each backend, but no graph IR, partitioner or exporter (cmake/LayeringCheck.cmake keeps it so):
// what an app that only runs exported programs ships.
#include "staticlm/tools/cli_main.h"

int main(int argc, char** argv) {
  using namespace staticlm::cli;
  return run_cli(argc, argv, "staticlm-run", "staticlm-run: run exported static-shape LLM programs",
                 {add_bench_command, add_embed_command, add_eval_command, add_inspect_command, add_logits_command,
                  add_run_command, add_serve_command, add_tokenize_command});
}
