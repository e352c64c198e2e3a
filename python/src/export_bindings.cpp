// SPDX-License-Identifier: Apache-2.0
// staticlm.export: a Hugging Face checkpoint to an hf_static v1 program, as `staticlm export`
// makes it (the same defaults, the same library call, the same errors).
#include <optional>
#include <string>
#include <vector>

#include <pybind11/functional.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "staticlm/exporter/hf_static_export.h"

#include "bindings.h"
#include "status_errors.h"

namespace py = pybind11;

namespace staticlm::python {
namespace {

// `value` as one of `names` (the CLI's choices), or ValueError naming the parameter.
template <typename T>
T choose(const std::string& parameter, const std::string& value,
         std::initializer_list<std::pair<const char*, T>> names) {
  std::vector<std::string> known;
  for (const auto& [name, choice] : names) {
    if (value == name) {
      return choice;
    }
    known.emplace_back(name);
  }
  raise_status(invalid_argument(parameter, ": expected one of ", join(known, ", "), ", found '", value, "'"));
}

py::dict summary_dict(const HfStaticExportSummary& summary) {
  py::dict out;
  out["architecture"] = summary.architecture;
  out["methods"] = summary.methods;
  out["prefill_len"] = summary.prefill_len;
  out["max_cache_len"] = summary.max_cache_len;
  out["file_bytes"] = summary.file_bytes;
  out["embedded_files"] = summary.embedded_files;
  out["backend"] = summary.placement.backend;
  out["placement"] = summary.placement.backend.empty() ? std::string() : summary.placement.summary();
  out["matrix_formats"] = summary.placement.formats_summary();
  return out;
}

}  // namespace

void register_export(py::module_& m) {
  m.def(
      "export",
      [](const std::string& hf_dir, const std::string& out_path, const std::string& dtype, int64_t prefill_len,
         int64_t max_cache_len, const std::string& cache_dtype, const std::string& kv_update, const std::string& logits,
         const py::object& embeddings, const py::object& partitioner, bool no_fallback, bool no_tokenizer,
         const py::object& progress) {
        HfStaticExportOptions options;
        options.weight_dtype =
            choose<DType>("dtype", dtype, {{"f32", DType::kF32}, {"f16", DType::kF16}, {"bf16", DType::kBF16}});
        options.prefill_len = prefill_len;
        options.max_cache_len = max_cache_len;
        options.cache_dtype = choose<DType>("cache_dtype", cache_dtype,
                                            {{"f32", DType::kF32}, {"f16", DType::kF16}, {"q8_0", DType::kQ8_0}});
        options.kv_update = choose<KvUpdateForm>(
            "kv_update", kv_update, {{"in-place", KvUpdateForm::kInPlace}, {"returned", KvUpdateForm::kReturned}});
        options.logits = choose<LogitsMode>("logits", logits, {{"all", LogitsMode::kAll}, {"last", LogitsMode::kLast}});
        if (!embeddings.is_none()) {
          if (!py::isinstance<py::str>(embeddings)) {
            raise_status(invalid_argument("embeddings: expected 'mean', 'last' or None, found ",
                                          py::repr(embeddings).cast<std::string>()));
          }
          options.embedding_pooling = embeddings.cast<std::string>();  // export_hf_static checks the value
        }
        options.no_fallback = no_fallback;
        options.no_tokenizer = no_tokenizer;
        if (partitioner.is_none()) {
          options.backend = value_or_raise(backend_registry().get("cpu"));  // as `staticlm export`
        } else if (py::isinstance<py::str>(partitioner)) {
          if (partitioner.cast<std::string>() != "none") {
            raise_status(
                invalid_argument("partitioner: expected a staticlm.Partitioner, None (the cpu backend) or "
                                 "'none' (the portable kernels only), found '",
                                 partitioner.cast<std::string>(), "'"));
          }
        } else {
          options.backend = partitioner_backend(partitioner, options.backend_options);
        }
        // An exception in the callback cannot cross the library: it is kept, and raised once the
        // export returns.
        std::optional<py::error_already_set> callback_error;
        if (!progress.is_none()) {
          options.on_progress = [&progress, &callback_error](const WriteProgress& written) {
            py::gil_scoped_acquire acquire;
            if (callback_error) {
              return;
            }
            try {
              progress(written.bytes_written, written.bytes_total);
            } catch (py::error_already_set& error) {
              callback_error = std::move(error);
            }
          };
        }
        Result<HfStaticExportSummary> summary = [&] {
          py::gil_scoped_release release;
          return export_hf_static(hf_dir, out_path, options);
        }();
        if (callback_error) {
          callback_error->restore();
          throw py::error_already_set();
        }
        return summary_dict(value_or_raise(std::move(summary)));
      },
      py::arg("hf_dir"), py::arg("out_path"), py::kw_only(), py::arg("dtype") = "f32", py::arg("prefill_len") = 64,
      py::arg("max_cache_len") = 0, py::arg("cache_dtype") = "f32", py::arg("kv_update") = "in-place",
      py::arg("logits") = "all", py::arg("embeddings") = py::none(), py::arg("partitioner") = py::none(),
      py::arg("no_fallback") = false, py::arg("no_tokenizer") = false, py::arg("progress") = py::none(),
      "Exports a Hugging Face checkpoint directory to an hf_static v1 program, as `staticlm export` "
      "does: partitioner=None delegates to the cpu backend with its defaults, 'none' keeps every node "
      "on the portable kernels, a Partitioner delegates with its options. no_tokenizer=True exports "
      "without a tokenizer (token ids only; otherwise a checkpoint without one is refused). embeddings='mean' "
      "or 'last' adds the embeddings method with that default pooling (docs/embeddings.md). progress(bytes_written, "
      "bytes_total) is called as the file is written. Returns a summary dict; raises staticlm.Error "
      "with the library's message otherwise.");
}

}  // namespace staticlm::python
