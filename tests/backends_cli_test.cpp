// SPDX-License-Identifier: Apache-2.0
// The backend commands as a user runs them: `staticlm backends` shows every backend's export and
// runtime options, `export --backend cpu` and `inspect` show the placement, `inspect --kernels` the
// kernel each node gets, refusals (QNN without its SDK, a misspelled option, --no-fallback) are one
// clear line.
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sys/wait.h>

#include "staticlm/backends/cpu/kernels/register.h"
#include "staticlm/exporter/hf_static_export.h"

#include "export_helpers.h"
#include "fixture_reference.h"

namespace staticlm {
namespace {

using testing::small_options;
using testing::temp_path;

struct CommandResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Runs the CLI without any QNN SDK in its environment, whatever the caller's is.
CommandResult run_cli(const std::string& args) {
  const std::string test = ::testing::UnitTest::GetInstance()->current_test_info()->name();
  const std::string out_path = temp_path("backends_cli_stdout_" + test + ".txt");
  const std::string err_path = temp_path("backends_cli_stderr_" + test + ".txt");
  const std::string command = "env -u QNN_SDK_ROOT -u QNN_SDK_VERSION " + std::string(STATICLM_CLI) + " " + args +
                              " >" + out_path + " 2>" + err_path;
  const int status = std::system(command.c_str());
  CommandResult result;
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  result.out = read_all(out_path);
  result.err = read_all(err_path);
  return result;
}

void expect_contains(const std::string& text, std::string_view expected) {
  EXPECT_NE(text.find(expected), std::string::npos) << "missing '" << expected << "' in:\n" << text;
}

TEST(BackendsCli, ListsEveryBackendAndItsSchema) {
  CommandResult all = run_cli("backends");
  ASSERT_EQ(all.exit_code, 0) << all.err;
  expect_contains(all.out, "backends: cpu, qnn");
  expect_contains(all.out, "    skip_node_op_set  string set  default {}  route partitioner");
  CommandResult qnn = run_cli("backends qnn");
  ASSERT_EQ(qnn.exit_code, 0) << qnn.err;
  EXPECT_EQ(qnn.out.find("cpu:"), std::string::npos);
  expect_contains(qnn.out, "    soc_model  enum  required  route common");
  expect_contains(qnn.out, "SM8850 (HTP v81, 8 MB VTCM, LPAI v6)");
  expect_contains(qnn.out, "    use_fp16  bool  default true  route htp  for backend=htp");
  expect_contains(qnn.out,
                  "    fps  int  default 1  range [1, 1000]  route lpai  for backend=lpai  needs SDK >= 2.39.0");
  expect_contains(qnn.out, "conflicts with use_multi_contexts");
  expect_contains(qnn.out, "sdk: QNN SDK version unknown");
  CommandResult unknown = run_cli("backends qnnn");
  EXPECT_NE(unknown.exit_code, 0);
  expect_contains(unknown.err, "unknown backend 'qnnn' (did you mean 'qnn'?)");
}

TEST(BackendsCli, ExportsForCpuAndInspectShowsThePlacement) {
  const std::string path = temp_path("cli_cpu.slm");
  const std::string options = temp_path("cli_cpu_options.json");
  std::ofstream(options) << R"({"skip_node_op_set": ["rope"]})";
  // The llama fixture: its heads of 16 are narrower than a panel, so its ropes stay ops of their
  // own (a fused qkv_rope_cache would hold them) and can be kept off by name.
  CommandResult exported = run_cli("export " + testing::fixture_dir("llama") + " -o " + path +
                                   " --prefill-len 8 --max-cache-len 64 --backend cpu --options " + options +
                                   " --option skip_node_id_set=prefill:0");
  ASSERT_EQ(exported.exit_code, 0) << exported.err;
  expect_contains(exported.out, "placement: prefill: ");
  expect_contains(exported.out,
                  "cpu settings: weight_dtype=as_exported, lm_head_dtype=weight_dtype, embedding_dtype=weight_dtype, "
                  "group_size=32, skip_node_id_set={prefill:0} (given), "
                  "skip_node_op_set={rope} (given), "
                  "skip_mutable_buffer=false");
  CommandResult inspected = run_cli("inspect " + path);
  ASSERT_EQ(inspected.exit_code, 0) << inspected.err;
  expect_contains(inspected.out, "placement (backend cpu):");
  expect_contains(inspected.out, "node 0 (embedding): skip_node_id_set has 'prefill:0'");
  expect_contains(inspected.out, "(rope): skip_node_op_set has 'rope'");
  expect_contains(inspected.out, "skip_node_op_set=[\"rope\"] (given)");
  CommandResult as_json = run_cli("inspect --json " + path);
  ASSERT_EQ(as_json.exit_code, 0) << as_json.err;
  nlohmann::json doc = nlohmann::json::parse(as_json.out);
  EXPECT_EQ(doc["placement"]["backend"], "cpu");
  EXPECT_EQ(doc["delegates"][0]["settings"]["backend"], "cpu");
  // Each node that reads matrices says how they are stored; the export and inspect count them.
  expect_contains(exported.out, "matrix formats: prefill: f32 x ");
  expect_contains(inspected.out, "    matrix formats: f32 x ");
  size_t with_format = 0;
  for (const nlohmann::json& node : doc["placement"]["methods"][0]["nodes"]) {
    if (node.contains("format")) {
      EXPECT_EQ(node["format"], "f32") << node.dump();
      ++with_format;
    } else {
      EXPECT_NE(node["op"], "linear") << node.dump();
    }
  }
  EXPECT_GT(with_format, 0u);
  EXPECT_FALSE(doc["metadata"].contains("placement"));
}

// The kernels of the nodes of op `op`, over every delegate call of `inspect --kernels --json`.
std::vector<std::string> delegated_kernels(const nlohmann::json& doc, const std::string& op) {
  std::vector<std::string> kernels;
  for (const nlohmann::json& method : doc["kernels"]["methods"]) {
    for (const nlohmann::json& call : method["delegate_calls"]) {
      for (const nlohmann::json& node : call["nodes"]) {
        if (node["op"] == op) kernels.push_back(node["kernel"]);
      }
    }
  }
  return kernels;
}

TEST(BackendsCli, InspectKernelsNamesTheKernelOfEachNode) {
  const std::string path = temp_path("cli_cpu_kernels.slm");
  CommandResult exported = run_cli("export " + testing::fixture_dir("llama") + " -o " + path +
                                   " --prefill-len 8 --max-cache-len 64 --backend cpu --option skip_node_op_set=rope");
  ASSERT_EQ(exported.exit_code, 0) << exported.err;
  CommandResult text = run_cli("inspect --kernels --runtime-option cpu.isa=portable " + path);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  expect_contains(text.out,
                  "kernels (chosen as `run` loads the program on this machine):\n"
                  "  cpu runtime options: isa=portable (given), bf16_gemm=auto\n"
                  "  prefill:\n"
                  "    kernel calls outside delegates: 4 nodes (features ");
  expect_contains(text.out, "    instruction 0, delegate 0 (cpu): 7 nodes (features none)\n");
  expect_contains(text.out, "      rms_norm               portable.rms_norm                    x 1\n");

  // The widest native path this machine runs is what a run takes; a cap at each path changes the
  // names to its kernels, and isa=portable to the portable ones.
  auto kernels_at = [&](const std::string& isa) {
    CommandResult result =
        run_cli("inspect --kernels --json " + path + (isa.empty() ? "" : " --runtime-option cpu.isa=" + isa));
    EXPECT_EQ(result.exit_code, 0) << result.err;
    return nlohmann::json::parse(result.out, nullptr, false);
  };
  const std::vector<std::string> ops = {"rms_norm",   "attention",    "linear",
                                        "linear_add", "multi_linear", "swiglu_linear"};
  for (const std::string& op : ops) {
    for (const std::string& kernel : delegated_kernels(kernels_at("portable"), op)) {
      EXPECT_EQ(kernel, "portable." + op);
    }
  }
  const nlohmann::json automatic = kernels_at("");
  bool widest = true;
  for (const CpuKernelPath& isa_path : cpu_kernel_paths()) {
    if (!CpuFeatures::host().covers(isa_path.needs)) continue;
    const nlohmann::json capped = kernels_at(isa_path.isa);
    for (const std::string& op : ops) {
      const std::vector<std::string> kernels = delegated_kernels(capped, op);
      EXPECT_FALSE(kernels.empty()) << op;
      for (const std::string& kernel : kernels) {
        EXPECT_EQ(kernel.rfind(isa_path.prefix, 0), 0u) << kernel << " at isa=" << isa_path.isa;
      }
      if (widest) {
        EXPECT_EQ(delegated_kernels(automatic, op), kernels) << op;
      }
    }
    widest = false;
  }
  CommandResult needs_kernels = run_cli("inspect --runtime-option cpu.isa=portable " + path);
  expect_contains(needs_kernels.err, "--runtime-option requires --kernels");
  CommandResult bad_isa = run_cli("inspect --kernels --runtime-option cpu.isa=portabel " + path);
  expect_contains(bad_isa.err, "option 'isa' (--runtime-option): 'portabel' is not one of");
  CommandResult other_backend = run_cli("inspect --kernels --runtime-option qnn.soc_model=SM8650 " + path);
  expect_contains(other_backend.err, "runtime options are given for backend 'qnn', but no delegate of");
  for (const CommandResult* result : {&needs_kernels, &bad_isa, &other_backend}) {
    EXPECT_NE(result->exit_code, 0);
    EXPECT_TRUE(result->out.empty()) << result->out;
    EXPECT_EQ(std::count(result->err.begin(), result->err.end(), '\n'), 1) << result->err;
  }
}

TEST(BackendsCli, RefusalsAreOneLineAndNameTheProblem) {
  const std::string dir = testing::fixture_dir("llama");
  const std::string out = " -o " + temp_path("cli_refused.slm") + " --prefill-len 8 --max-cache-len 64";
  CommandResult qnn = run_cli("export " + dir + out + " --backend qnn --option soc_model=SM8650");
  EXPECT_NE(qnn.exit_code, 0);
  expect_contains(qnn.err, "QNN SDK not found");
  CommandResult typo =
      run_cli("export " + dir + out + " --backend qnn --option soc_model=SM8650 --option use_fp61=true");
  expect_contains(typo.err, "unknown option 'use_fp61' for backend 'qnn' (did you mean 'use_fp16'?)");
  CommandResult fallback =
      run_cli("export " + dir + out + " --backend cpu --option skip_node_op_set=rope --no-fallback");
  EXPECT_NE(fallback.exit_code, 0);
  expect_contains(fallback.err, "stay on the portable kernels: method 'prefill' node ");
  HfStaticExportOptions no_backend = small_options();
  no_backend.backend_options = testing::text_options({{"soc_model", "SM8650"}});
  Status library = export_hf_static(dir, temp_path("no_backend.slm"), no_backend).status();
  expect_contains(library.message(), "backend options and no-fallback need a backend");
  CommandResult orphan = run_cli("export " + dir + out + " --backend none --option soc_model=SM8650");
  expect_contains(orphan.err, "need a delegate backend, not --backend none");
  // Without --backend, export partitions for cpu, whose schema has no soc_model.
  CommandResult default_cpu = run_cli("export " + dir + out + " --option soc_model=SM8650");
  expect_contains(default_cpu.err, "unknown option 'soc_model' for backend 'cpu'");
  // The cpu backend's weight_dtype is its own option, not the exporter's --dtype.
  CommandResult bad_dtype = run_cli("export " + dir + out + " --option weight_dtype=int2");
  expect_contains(bad_dtype.err,
                  "option 'weight_dtype' (--option): 'int2' is not one of as_exported, f32, f16, bf16, int8, int4");
  EXPECT_EQ(bad_dtype.err.find("--dtype"), std::string::npos) << bad_dtype.err;
  for (const CommandResult* result : {&qnn, &typo, &fallback, &orphan, &default_cpu, &bad_dtype}) {
    EXPECT_EQ(std::count(result->err.begin(), result->err.end(), '\n'), 1) << result->err;
  }
}

}  // namespace
}  // namespace staticlm
