// SPDX-License-Identifier: Apache-2.0
// `staticlm inspect FILE [--json]`: what a program file holds. One description (a JSON
// document) feeds both the --json output and the text rendering, so they never disagree.
// It lists the matrices the methods' and delegates' instruction lists read (each stored once:
// its layout, format and bits per weight), read from the instructions themselves, so what it
// says is what the kernels are given.
// For a partitioned program it also shows the placement report (metadata "placement": where
// each node runs, and why a node stayed on the portable kernels) and each delegate's effective
// settings (compile spec "effective_settings"). Both are JSON written by the partitioner, but
// the file is untrusted, so they are parsed defensively.
// With --kernels it also prepares the program as `run` does (every delegate initialised with its
// backend's runtime options, nothing run) and says which kernel each node got, grouped by op and
// kernel: the names are those of the kernel registries, so what it shows is what runs.
#include <chrono>
#include <cstdio>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "staticlm/builtin/builtin_runtime.h"
#include "staticlm/chat/program_chat_template.h"
#include "staticlm/core/cpu_topology.h"
#include "staticlm/core/tensor.h"
#include "staticlm/format/metadata_keys.h"
#include "staticlm/format/program_file.h"
#include "staticlm/runtime/program.h"
#include "staticlm/tools/command.h"
#include "staticlm/tools/engine_flags.h"
#include "staticlm/tools/program_matrices.h"

namespace staticlm::cli {
namespace {

using nlohmann::json;

json metadata_json(const fb::MetadataEntry& entry) {
  switch (entry.type()) {
    case fb::MetadataType::Int: return entry.int_value();
    case fb::MetadataType::Float: return entry.float_value();
    case fb::MetadataType::String: return entry.string_value() == nullptr ? "" : entry.string_value()->str();
    case fb::MetadataType::Bool: return entry.bool_value();
    case fb::MetadataType::IntList: {
      json list = json::array();
      if (entry.int_list() != nullptr) {
        for (int64_t v : *entry.int_list()) {
          list.push_back(v);
        }
      }
      return list;
    }
  }
  return nullptr;
}

// A JSON document from the file, or {"error": ...} when it does not parse.
json parse_untrusted_json(std::string_view text) {
  json parsed = json::parse(text, nullptr, false);
  if (parsed.is_discarded()) {
    return {{"error", "not valid JSON"}};
  }
  return parsed;
}

json placement_json(const fb::MetadataEntry& entry) {
  if (entry.type() != fb::MetadataType::String || entry.string_value() == nullptr) {
    return {{"error", "metadata 'placement' is not a string"}};
  }
  return parse_untrusted_json(entry.string_value()->string_view());
}

std::string spec_string(const fb::Value& value) {
  std::string out(dtype_name(static_cast<DType>(value.dtype())));
  Shape shape;
  if (value.shape() != nullptr) {
    shape.assign(value.shape()->begin(), value.shape()->end());
  }
  return out + shape_string(shape);
}

json io_json(const fb::Method& method, const flatbuffers::Vector<flatbuffers::Offset<fb::IoTensor>>* io) {
  json list = json::array();
  if (io == nullptr) {
    return list;
  }
  for (const fb::IoTensor* tensor : *io) {
    const fb::Value& value = *method.values()->Get(tensor->value());
    Shape shape(value.shape()->begin(), value.shape()->end());
    list.push_back({{"name", tensor->name()->str()},
                    {"dtype", std::string(dtype_name(static_cast<DType>(value.dtype())))},
                    {"shape", shape},
                    {"mutable", tensor->mutable_()},
                    {"spec", spec_string(value)}});
  }
  return list;
}

json matrices_json(const ProgramFile& file) {
  json list = json::array();
  for (const ProgramMatrix& matrix : program_matrices(file)) {
    list.push_back({{"name", matrix.name},
                    {"shape", matrix.shape},
                    {"layout", matrix.layout},
                    {"format", matrix.format},
                    {"bytes", matrix.bytes},
                    {"bits_per_weight", matrix.bits_per_weight()},
                    {"read_by", matrix.read_by},
                    {"rows", matrix.rows}});
  }
  return list;
}

json describe(const ProgramFile& file) {
  const fb::Program& program = file.program();
  json doc;
  doc["path"] = file.path();
  doc["file_bytes"] = file.file_size();
  doc["format_version"] =
      std::to_string(file.header().major_version) + "." + std::to_string(file.header().minor_version);

  json metadata = json::object();
  if (program.metadata() != nullptr) {
    for (const fb::MetadataEntry* entry : *program.metadata()) {
      if (entry->key()->string_view() == kPlacementMetadataKey) {
        doc["placement"] = placement_json(*entry);
        continue;
      }
      metadata[entry->key()->str()] = metadata_json(*entry);
    }
  }
  doc["metadata"] = metadata;

  json methods = json::array();
  if (program.methods() != nullptr) {
    for (const fb::Method* method : *program.methods()) {
      uint64_t kernel_calls = 0;
      uint64_t delegate_calls = 0;
      std::map<std::string, uint64_t> ops;
      if (method->instructions() != nullptr) {
        for (const fb::InstructionEntry* entry : *method->instructions()) {
          if (const fb::KernelCall* call = entry->instruction_as_KernelCall()) {
            ++kernel_calls;
            ++ops[call->op()->str()];
          } else {
            ++delegate_calls;
          }
        }
      }
      methods.push_back({{"name", method->name()->str()},
                         {"inputs", io_json(*method, method->inputs())},
                         {"outputs", io_json(*method, method->outputs())},
                         {"kernel_calls", kernel_calls},
                         {"delegate_calls", delegate_calls},
                         {"ops", ops},
                         {"arena_bytes", method->memory_plan() == nullptr ? 0 : method->memory_plan()->arena_size()}});
    }
  }
  doc["methods"] = methods;

  std::map<std::string, json> by_dtype;
  uint64_t constant_bytes = 0;
  uint64_t constant_count = 0;
  if (program.constants() != nullptr) {
    for (const fb::Constant* constant : *program.constants()) {
      std::string dtype(dtype_name(static_cast<DType>(constant->dtype())));
      json& slot = by_dtype[dtype];
      if (slot.is_null()) {
        slot = {{"count", 0}, {"bytes", 0}};
      }
      slot["count"] = slot["count"].get<uint64_t>() + 1;
      slot["bytes"] = slot["bytes"].get<uint64_t>() + constant->size();
      constant_bytes += constant->size();
      ++constant_count;
    }
  }
  doc["constants"] = {{"count", constant_count}, {"bytes", constant_bytes}, {"by_dtype", by_dtype}};

  // Named data: what delegates share between methods (packed weights), stored once.
  uint64_t named_bytes = 0;
  uint64_t named_count = 0;
  if (program.named_data() != nullptr) {
    for (const fb::NamedData* entry : *program.named_data()) {
      named_bytes += file.segment(entry->segment()).size();
      ++named_count;
    }
  }
  doc["named_data"] = {{"count", named_count}, {"bytes", named_bytes}};

  doc["memory"] = {{"weight_bytes", program_weight_bytes(file)}, {"cache_bytes", program_cache_bytes(file)}};

  json delegates = json::array();
  if (program.delegates() != nullptr) {
    for (const fb::Delegate* delegate : *program.delegates()) {
      json specs = json::array();
      json settings;
      if (delegate->compile_specs() != nullptr) {
        for (const fb::CompileSpec* spec : *delegate->compile_specs()) {
          specs.push_back(
              {{"key", spec->key()->str()}, {"bytes", spec->value() == nullptr ? 0 : spec->value()->size()}});
          if (spec->key()->string_view() == kEffectiveSettingsSpecKey && spec->value() != nullptr) {
            settings = parse_untrusted_json(
                std::string_view(reinterpret_cast<const char*>(spec->value()->data()), spec->value()->size()));
          }
        }
      }
      json entry = {{"backend", delegate->backend_id()->str()},
                    {"blob_bytes", file.segment(delegate->blob_segment()).size()},
                    {"compile_specs", specs}};
      if (!settings.is_null()) {
        entry["settings"] = settings;
      }
      delegates.push_back(std::move(entry));
    }
  }
  doc["delegates"] = delegates;

  json files = json::array();
  if (program.files() != nullptr) {
    for (const fb::EmbeddedFile* embedded : *program.files()) {
      files.push_back({{"name", embedded->name()->str()}, {"bytes", file.segment(embedded->segment()).size()}});
    }
  }
  doc["embedded_files"] = files;
  doc["checksum_kind"] = file.checksum_kind().empty() ? json(nullptr) : json(std::string(file.checksum_kind()));
  // The embedded tokenizer's file; null for a program that takes token ids only.
  // What a run of this program on this machine takes by default (cpu_topology.h).
  doc["default_threads"] = describe_core_choice(default_cores());
  doc["tokenizer"] = nullptr;
  for (std::string_view name : {"tokenizer.json", "tokenizer.model"}) {
    if (doc["tokenizer"].is_null() && file.embedded_file(name)) {
      doc["tokenizer"] = std::string(name);
    }
  }
  // Where `run --chat` and `serve` take the chat template from; null: the ChatML default.
  const auto chat_template = program_chat_template_origin(file);
  if (!chat_template.ok()) {
    doc["chat_template"] = {{"error", chat_template.status().message()}};
  } else {
    doc["chat_template"] = *chat_template ? json(**chat_template) : json(nullptr);
  }
  doc["matrices"] = matrices_json(file);
  return doc;
}

// One line per layout and format: "panel32 f32: 211 matrices (513.0 MiB, 32.00 bits/weight)";
// with `each`, a line per matrix after it.
void print_matrices(const json& matrices, bool each) {
  struct Total {
    uint64_t count = 0;
    uint64_t bytes = 0;
    double weights = 0.0;
  };
  std::map<std::string, Total> totals;
  for (const json& matrix : matrices) {
    Total& total = totals[matrix["layout"].get<std::string>() + " " + matrix["format"].get<std::string>()];
    ++total.count;
    total.bytes += matrix["bytes"].get<uint64_t>();
    total.weights += static_cast<double>(num_elements(matrix["shape"].get<Shape>()));
  }
  std::printf("matrices: %zu%s\n", matrices.size(),
              matrices.empty() ? "" : ", by layout and format (`--matrices` lists each):");
  for (const auto& [format, total] : totals) {
    std::printf("  %-18s %llu (%s, %.2f bits/weight)\n", format.c_str(), static_cast<unsigned long long>(total.count),
                human_bytes(total.bytes).c_str(),
                total.weights > 0 ? 8.0 * static_cast<double>(total.bytes) / total.weights : 0.0);
  }
  if (!each) {
    return;
  }
  for (const json& matrix : matrices) {
    std::printf("    %-56s %-14s %-10s %-9s %10s  %5.2f bits/weight  (%s)\n", matrix["name"].get<std::string>().c_str(),
                shape_string(matrix["shape"].get<Shape>()).c_str(), matrix["layout"].get<std::string>().c_str(),
                matrix["format"].get<std::string>().c_str(), human_bytes(matrix["bytes"].get<uint64_t>()).c_str(),
                matrix["bits_per_weight"].get<double>(),
                join(matrix["read_by"].get<std::vector<std::string>>(), ", ").c_str());
  }
}

void print_io(const json& tensors, const char* kind) {
  for (const json& tensor : tensors) {
    std::printf("    %-6s %-24s %s%s\n", kind, tensor["name"].get<std::string>().c_str(),
                tensor["spec"].get<std::string>().c_str(), tensor["mutable"].get<bool>() ? "  (mutable)" : "");
  }
}

// A field of an untrusted document as text, or `fallback`.
std::string text_field(const json& object, const char* key, std::string fallback = "?") {
  if (!object.is_object() || !object.contains(key)) {
    return fallback;
  }
  const json& value = object[key];
  return value.is_string() ? value.get<std::string>() : value.dump();
}

// "skip_mutable_buffer=false, use_fp16=true (given), ..." from ResolvedOptions::to_json().
std::string settings_text(const json& settings) {
  if (!settings.is_object() || !settings.contains("options") || !settings["options"].is_array()) {
    return "unreadable (" + settings.dump() + ")";
  }
  std::vector<std::string> parts;
  for (const json& option : settings["options"]) {
    std::string part = text_field(option, "name") + "=" + text_field(option, "value");
    if (text_field(option, "source") == "given") {
      part += " (given)";
    }
    parts.push_back(std::move(part));
  }
  return parts.empty() ? "none" : join(parts, ", ");
}

// "0-12, 14, 16-20"
std::string ranges(const std::vector<int64_t>& nodes) {
  std::vector<std::string> parts;
  for (size_t i = 0; i < nodes.size();) {
    size_t j = i;
    while (j + 1 < nodes.size() && nodes[j + 1] == nodes[j] + 1) ++j;
    parts.push_back(j == i ? std::to_string(nodes[i]) : str_cat(nodes[i], "-", nodes[j]));
    i = j + 1;
  }
  return join(parts, ", ");
}

void print_placement(const json& placement) {
  if (!placement.is_object() || !placement.contains("methods") || !placement["methods"].is_array()) {
    std::printf("placement: unreadable (%s)\n", placement.dump().c_str());
    return;
  }
  const std::string backend = text_field(placement, "backend");
  std::printf("placement (backend %s):\n", backend.c_str());
  for (const json& method : placement["methods"]) {
    if (!method.is_object() || !method.contains("nodes") || !method["nodes"].is_array()) {
      continue;
    }
    std::map<std::string, std::vector<int64_t>> by_delegate;
    std::map<std::string, size_t> formats;
    std::vector<std::string> left;
    size_t delegated = 0;
    for (const json& node : method["nodes"]) {
      const json index = node.is_object() && node.contains("node") ? node["node"] : json();
      if (!index.is_number_integer()) {
        continue;
      }
      if (node.contains("format")) {
        ++formats[text_field(node, "format")];
      }
      if (node.contains("delegate")) {
        by_delegate[text_field(node, "delegate")].push_back(index.get<int64_t>());
        ++delegated;
      } else {
        left.push_back(str_cat("node ", index.get<int64_t>(), " (", text_field(node, "op"),
                               "): ", text_field(node, "reason", "no reason recorded")));
      }
    }
    std::printf("  %s: %zu of %zu nodes on %s, %zu on the portable kernels\n", text_field(method, "name").c_str(),
                delegated, method["nodes"].size(), backend.c_str(), left.size());
    for (const auto& [delegate, nodes] : by_delegate) {
      std::printf("    delegate %s: nodes %s\n", delegate.c_str(), ranges(nodes).c_str());
    }
    for (const std::string& line : left) {
      std::printf("    %s\n", line.c_str());
    }
    std::vector<std::string> counted;
    for (const auto& [format, count] : formats) {
      counted.push_back(str_cat(format, " x ", count));
    }
    if (!counted.empty()) {
      std::printf("    matrix formats: %s\n", join(counted, ", ").c_str());
    }
  }
}

json nodes_json(const std::vector<NodeKernel>& nodes) {
  json list = json::array();
  for (const NodeKernel& node : nodes) {
    list.push_back({{"node", node.node}, {"op", node.op}, {"kernel", node.kernel}});
  }
  return list;
}

// The kernel calls a method runs itself (on the portable kernels), then each delegate call's
// nodes as its backend reports them; instruction i of the file is the method's choices()[i].
json method_kernels_json(const fb::Method& stored, const PreparedMethod& method, const fb::Program& program) {
  const KernelReport own = method.kernel_report();
  json doc = {{"name", method.name()},
              {"kernel_calls", {{"features", own.features}, {"nodes", nodes_json(own.nodes)}}}};
  json delegates = json::array();
  const std::span<const InstructionChoice> choices = method.choices();
  for (size_t i = 0; i < choices.size(); ++i) {
    if (choices[i].delegate == nullptr) {
      continue;
    }
    json entry = {{"instruction", i}};
    const fb::DelegateCall* call =
        stored.instructions() != nullptr && i < stored.instructions()->size()
            ? stored.instructions()->Get(static_cast<uint32_t>(i))->instruction_as_DelegateCall()
            : nullptr;
    if (call != nullptr) {
      entry["delegate"] = call->delegate();
      entry["backend"] = program.delegates()->Get(call->delegate())->backend_id()->str();
    }
    if (const std::optional<KernelReport> report = choices[i].delegate->kernel_report()) {
      entry["features"] = report->features;
      entry["nodes"] = nodes_json(report->nodes);
    } else {
      entry["nodes"] = nullptr;  // the backend does not report kernels
    }
    delegates.push_back(std::move(entry));
  }
  doc["delegate_calls"] = std::move(delegates);
  return doc;
}

// --kernels: the program loaded as `run` loads it (the builtin registries, `runtime_options`
// resolved against each delegate backend's schema), so a load error is the one `run` would give.
Result<json> kernels_json(std::shared_ptr<const ProgramFile> file, const std::vector<std::string>& runtime_options) {
  STATICLM_ASSIGN_OR_RETURN(EngineRuntime runtime, builtin_engine_runtime());
  LoadOptions load;
  load.kernels = runtime.kernels.get();
  load.backends = runtime.backends.get();
  load.num_threads = 1;  // nothing runs, so no workers; kernel selection does not depend on them
  STATICLM_ASSIGN_OR_RETURN(load.backend_options, parse_runtime_options(runtime_options));
  STATICLM_ASSIGN_OR_RETURN(std::shared_ptr<const Program> program, Program::from_file(file, std::move(load)));
  json options = json::object();
  for (const auto& [backend, resolved] : program->backend_options()) {
    options[backend] = json::parse(resolved.to_json());
  }
  json methods = json::array();
  for (const std::string& name : program->method_names()) {
    STATICLM_ASSIGN_OR_RETURN(const PreparedMethod* method, program->method(name));
    methods.push_back(method_kernels_json(*file->find_method(name), *method, file->program()));
  }
  return json{{"runtime_options", options}, {"methods", methods}};
}

// "      linear            cpu.avx512.linear  x 84", one line per op and kernel.
void print_node_kernels(const json& nodes) {
  std::map<std::pair<std::string, std::string>, size_t> counts;
  for (const json& node : nodes) {
    ++counts[{node["op"].get<std::string>(), node["kernel"].get<std::string>()}];
  }
  for (const auto& [op_kernel, count] : counts) {
    std::printf("      %-22s %-36s x %zu\n", op_kernel.first.c_str(), op_kernel.second.c_str(), count);
  }
}

void print_kernels(const json& kernels) {
  std::printf("kernels (chosen as `run` loads the program on this machine):\n");
  for (const auto& [backend, settings] : kernels["runtime_options"].items()) {
    std::printf("  %s runtime options: %s\n", backend.c_str(), settings_text(settings).c_str());
  }
  for (const json& method : kernels["methods"]) {
    std::printf("  %s:\n", method["name"].get<std::string>().c_str());
    const json& own = method["kernel_calls"];
    if (!own["nodes"].empty()) {
      std::printf("    kernel calls outside delegates: %zu nodes (features %s)\n", own["nodes"].size(),
                  own["features"].get<std::string>().c_str());
      print_node_kernels(own["nodes"]);
    }
    for (const json& call : method["delegate_calls"]) {
      const std::string where = str_cat("instruction ", call["instruction"].get<size_t>(), ", delegate ",
                                        text_field(call, "delegate"), " (", text_field(call, "backend"), ")");
      if (call["nodes"].is_null()) {
        std::printf("    %s: backend %s does not report kernels\n", where.c_str(), text_field(call, "backend").c_str());
        continue;
      }
      std::printf("    %s: %zu nodes (features %s)\n", where.c_str(), call["nodes"].size(),
                  call["features"].get<std::string>().c_str());
      print_node_kernels(call["nodes"]);
    }
  }
}

void print_text(const json& doc, bool each_matrix) {
  std::printf("program: %s (%s, format %s)\n", doc["path"].get<std::string>().c_str(),
              human_bytes(doc["file_bytes"].get<uint64_t>()).c_str(), doc["format_version"].get<std::string>().c_str());
  std::printf("metadata:%s\n", doc["metadata"].empty() ? " none" : "");
  for (const auto& [key, value] : doc["metadata"].items()) {
    std::printf("  %s = %s\n", key.c_str(), value.dump().c_str());
  }
  std::printf("methods:%s\n", doc["methods"].empty() ? " none" : "");
  for (const json& method : doc["methods"]) {
    std::printf("  %s: %zu inputs, %zu outputs, %llu kernel calls, %llu delegate calls, arena %s\n",
                method["name"].get<std::string>().c_str(), method["inputs"].size(), method["outputs"].size(),
                static_cast<unsigned long long>(method["kernel_calls"].get<uint64_t>()),
                static_cast<unsigned long long>(method["delegate_calls"].get<uint64_t>()),
                human_bytes(method["arena_bytes"].get<uint64_t>()).c_str());
    print_io(method["inputs"], "input");
    print_io(method["outputs"], "output");
  }
  const json& constants = doc["constants"];
  std::printf("constants: %llu (%s)\n", static_cast<unsigned long long>(constants["count"].get<uint64_t>()),
              human_bytes(constants["bytes"].get<uint64_t>()).c_str());
  for (const auto& [dtype, entry] : constants["by_dtype"].items()) {
    std::printf("  %-5s %llu (%s)\n", dtype.c_str(), static_cast<unsigned long long>(entry["count"].get<uint64_t>()),
                human_bytes(entry["bytes"].get<uint64_t>()).c_str());
  }
  const json& named = doc["named_data"];
  if (named["count"].get<uint64_t>() > 0) {
    std::printf("named data: %llu entries (%s), shared by every method's delegates\n",
                static_cast<unsigned long long>(named["count"].get<uint64_t>()),
                human_bytes(named["bytes"].get<uint64_t>()).c_str());
  }
  print_matrices(doc["matrices"], each_matrix);
  if (doc.contains("placement")) {
    print_placement(doc["placement"]);
  }
  std::printf("delegates:%s\n", doc["delegates"].empty() ? " none" : "");
  for (size_t d = 0; d < doc["delegates"].size(); ++d) {
    const json& delegate = doc["delegates"][d];
    std::printf("  %zu: %s, blob %s, %zu compile specs\n", d, delegate["backend"].get<std::string>().c_str(),
                human_bytes(delegate["blob_bytes"].get<uint64_t>()).c_str(), delegate["compile_specs"].size());
    if (delegate.contains("settings")) {
      std::printf("    settings: %s\n", settings_text(delegate["settings"]).c_str());
    }
  }
  if (doc.contains("kernels")) {
    print_kernels(doc["kernels"]);
  }
  std::printf("memory: weights %s (mapped from the file), KV caches %s per session (the methods' in-place inputs)\n",
              human_bytes(doc["memory"]["weight_bytes"].get<uint64_t>()).c_str(),
              human_bytes(doc["memory"]["cache_bytes"].get<uint64_t>()).c_str());
  std::printf("embedded files:%s\n", doc["embedded_files"].empty() ? " none" : "");
  for (const json& embedded : doc["embedded_files"]) {
    std::printf("  %s (%s)\n", embedded["name"].get<std::string>().c_str(),
                human_bytes(embedded["bytes"].get<uint64_t>()).c_str());
  }
  std::printf(
      "checksums: %s\n",
      doc["checksum_kind"].is_null()
          ? "none (written before format 1.2; its contents cannot be verified)"
          : (doc["checksum_kind"].get<std::string>() + " per data segment (inspect --verify checks them)").c_str());
  std::printf("threads here: %s by default (-t sets another count)\n",
              doc["default_threads"].get<std::string>().c_str());
  std::printf("tokenizer: %s\n", doc["tokenizer"].is_null()
                                     ? "none: the program takes token ids only (exported with --no-tokenizer)"
                                     : ("embedded " + doc["tokenizer"].get<std::string>()).c_str());
  const json& chat_template = doc["chat_template"];
  std::printf("chat template: %s\n", chat_template.is_null() ? "none (run --chat and serve use ChatML, docs/chat.md)"
                                     : chat_template.is_object()
                                         ? ("unusable: " + chat_template["error"].get<std::string>()).c_str()
                                         : chat_template.get<std::string>().c_str());
}

struct InspectOptions {
  std::string path;
  bool json = false;
  bool matrices = false;
  bool verify = false;
  bool kernels = false;
  std::vector<std::string> runtime_options;  // BACKEND.KEY=VALUE, for --kernels
};

// --verify: every byte against its checksum, after the description. A file written before
// checksums is not an error: it says so.
Status verify(const ProgramFile& file, bool json_output) {
  const auto start = std::chrono::steady_clock::now();
  const Status status = file.verify_contents();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (status.code() == StatusCode::kFailedPrecondition) {
    std::fprintf(json_output ? stderr : stdout, "contents: not verified: %s\n", status.message().c_str());
    return ok_status();
  }
  STATICLM_RETURN_IF_ERROR(status);
  const uint64_t segments = file.program().segments() != nullptr ? file.program().segments()->size() : 0;
  std::fprintf(json_output ? stderr : stdout,
               "contents: verified: %llu data segments (%s) match their %s checksums "
               "(%.2f s)\n",
               static_cast<unsigned long long>(segments), human_bytes(file.header().data_size).c_str(),
               std::string(file.checksum_kind()).c_str(), seconds);
  return ok_status();
}

}  // namespace

Command add_inspect_command(CLI::App& parent) {
  auto options = std::make_shared<InspectOptions>();
  CLI::App* app = parent.add_subcommand("inspect", "Print what a program file holds");
  app->add_option("file", options->path, "Program file (.slm)")->required();
  app->add_flag("--json", options->json, "Print a JSON document instead of text");
  app->add_flag("--matrices", options->matrices, "List every matrix: shape, layout, format, bits per weight, readers");
  app->add_flag("--verify", options->verify,
                "Read every byte and check it against the checksums the writer recorded (names what differs)");
  CLI::Option* kernels =
      app->add_flag("--kernels", options->kernels,
                    "Load the program as `run` does (nothing runs) and list the kernel each node gets here");
  app->add_option("--runtime-option", options->runtime_options,
                  "With --kernels: backend runtime option BACKEND.KEY=VALUE, e.g. cpu.isa=avx2 (repeatable)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->needs(kernels);
  return {app, [options]() -> Status {
            STATICLM_ASSIGN_OR_RETURN(std::unique_ptr<ProgramFile> opened, ProgramFile::open(options->path));
            std::shared_ptr<const ProgramFile> file = std::move(opened);
            json doc = describe(*file);
            // Loaded before anything prints, so a program that does not load gives one error line.
            if (options->kernels) {
              STATICLM_ASSIGN_OR_RETURN(doc["kernels"], kernels_json(file, options->runtime_options));
            }
            if (options->json) {
              std::printf("%s\n", doc.dump(2).c_str());
            } else {
              print_text(doc, options->matrices);
            }
            return options->verify ? verify(*file, options->json) : ok_status();
          }};
}

}  // namespace staticlm::cli
