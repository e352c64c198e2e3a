// SPDX-License-Identifier: Apache-2.0
// The LLM runner from Python: _Runner (an Engine and one session over a program, generation with
// the GIL released and taken back for each callback) and _Tokenizer. staticlm/_runner.py builds
// the public TextLLMRunner, GenerationConfig, Stats and Result on them.
#include <atomic>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "staticlm/builtin/builtin_runtime.h"
#include "staticlm/llm/embedding.h"
#include "staticlm/llm/engine.h"
#include "staticlm/llm/generator.h"
#include "staticlm/llm/program_tokenizer.h"
#include "staticlm/llm/session_file.h"
#include "staticlm/llm/tokenizer/tokenizer.h"

#include "bindings.h"
#include "status_errors.h"

namespace py = pybind11;

namespace staticlm::python {
namespace {

template <typename T>
std::optional<T> optional_attr(const py::object& config, const char* name) {
  const py::object value = config.attr(name);
  return value.is_none() ? std::nullopt : std::optional<T>(value.cast<T>());
}

// GenerationOptions from a GenerationConfig (its attributes): the program's end-of-sequence ids,
// and its generation_config for each sampling field left None (Engine::choose_sampling).
GenerationOptions generation_options(const Engine& engine, const py::object& config) {
  GenerationOptions options = engine.default_generation();
  const std::optional<int64_t> max_new_tokens = optional_attr<int64_t>(config, "max_new_tokens");
  options.max_new_tokens = max_new_tokens.value_or(std::numeric_limits<int64_t>::max());
  options.stop_at_context_end = !max_new_tokens;
  SamplingOverrides given;
  given.temperature = optional_attr<double>(config, "temperature");
  given.top_k = optional_attr<int64_t>(config, "top_k");
  given.top_p = optional_attr<double>(config, "top_p");
  given.min_p = optional_attr<double>(config, "min_p");
  given.repetition_penalty = optional_attr<double>(config, "repetition_penalty");
  const py::object seed = config.attr("seed");
  if (!seed.is_none()) {
    if (py::int_(0).attr("__gt__")(seed).cast<bool>()) {
      ok_or_raise(invalid_argument("GenerationConfig.seed: expected None (a random seed) or an integer >= 0, found ",
                                   py::str(seed).cast<std::string>()));
    }
    given.seed = seed.cast<uint64_t>();
  }
  const py::object logit_bias = config.attr("logit_bias");
  if (!logit_bias.is_none()) {
    if (!py::isinstance<py::dict>(logit_bias)) {
      ok_or_raise(invalid_argument("GenerationConfig.logit_bias: expected a dict {token id: bias}, found ",
                                   py::str(logit_bias.get_type().attr("__name__")).cast<std::string>()));
    }
    std::vector<std::pair<int32_t, float>> biases;
    for (const auto& [id, bias] : logit_bias.cast<py::dict>()) {
      const bool id_ok = py::isinstance<py::int_>(id) && !py::isinstance<py::bool_>(id) &&
                         py::int_(0).attr("__le__")(id).cast<bool>() &&
                         py::int_(std::numeric_limits<int32_t>::max()).attr("__ge__")(id).cast<bool>();
      if (!id_ok || !(py::isinstance<py::float_>(bias) || py::isinstance<py::int_>(bias))) {
        ok_or_raise(
            invalid_argument("GenerationConfig.logit_bias: expected token ids in [0, 2^31) mapped to numbers, "
                             "found ",
                             py::repr(id).cast<std::string>(), ": ", py::repr(bias).cast<std::string>()));
      }
      biases.emplace_back(id.cast<int32_t>(), bias.cast<float>());
    }
    given.logit_bias = std::move(biases);
  }
  options.sampling = value_or_raise(engine.choose_sampling(given));
  const py::object logprobs = config.attr("logprobs");
  if (!logprobs.is_none()) {
    const bool in_range = py::isinstance<py::int_>(logprobs) && !py::isinstance<py::bool_>(logprobs) &&
                          py::int_(0).attr("__le__")(logprobs).cast<bool>() &&
                          py::int_(kMaxTopLogprobs).attr("__ge__")(logprobs).cast<bool>();
    if (!in_range) {
      ok_or_raise(invalid_argument("GenerationConfig.logprobs: expected None or an integer in [0, ", kMaxTopLogprobs,
                                   "] (alternatives per token), found ", py::repr(logprobs).cast<std::string>()));
    }
    options.top_logprobs = logprobs.cast<int>();
  }
  options.stop_strings = config.attr("stop").cast<std::vector<std::string>>();
  options.reuse_cached_prefix = config.attr("reuse_cached_prefix").cast<bool>();
  const py::object grammar = config.attr("grammar");
  const py::object schema = config.attr("json_schema");
  if (!grammar.is_none() && !schema.is_none()) {
    ok_or_raise(invalid_argument("GenerationConfig: give grammar or json_schema, not both"));
  }
  if (!grammar.is_none() || !schema.is_none()) {
    GrammarSpec spec;
    if (!grammar.is_none()) {
      spec.kind = GrammarSpec::Kind::kGbnf;
      spec.text = grammar.cast<std::string>();
    } else {
      spec.kind = GrammarSpec::Kind::kJsonSchema;
      // A dict (or True) is the schema; a str is its JSON text.
      spec.text = py::isinstance<py::str>(schema)
                      ? schema.cast<std::string>()
                      : py::module_::import("json").attr("dumps")(schema).cast<std::string>();
    }
    auto compiled = [&] {
      py::gil_scoped_release release;
      return engine.compile_grammar(spec);
    }();
    if (!compiled.ok()) {
      ok_or_raise(compiled.status().with_context(!grammar.is_none() ? "GenerationConfig.grammar"
                                                                    : "GenerationConfig.json_schema"));
    }
    options.grammar = std::move(compiled).value();
  }
  return options;
}

py::dict sampling_dict(const SamplingParams& params) {
  py::dict out;
  out["temperature"] = params.temperature;
  out["top_k"] = params.top_k;
  out["top_p"] = params.top_p;
  out["min_p"] = params.min_p;
  out["repetition_penalty"] = params.repetition_penalty;
  out["seed"] = params.temperature == 0.0 ? py::object(py::none()) : py::object(py::int_(params.seed));
  return out;
}

// The names OpenAI-style APIs and Python code compare against.
std::string finish_reason(StopReason reason) {
  switch (reason) {
    case StopReason::kEos: return "eos";
    case StopReason::kStopString: return "stop_string";
    case StopReason::kMaxNewTokens: return "max_new_tokens";
    case StopReason::kContextFull: return "context_full";
    case StopReason::kCancelled: return "cancelled";
    case StopReason::kGrammarComplete: return "grammar_complete";
  }
  return "unknown";
}

py::dict io_dict(const IoStats& io) {
  py::list allocators;
  uint64_t buffers = 0;
  uint64_t bytes = 0;
  for (const AllocatorUsage& usage : io.per_allocator) {
    py::dict entry;
    entry["allocator"] = usage.allocator;
    entry["buffers"] = usage.buffers;
    entry["bytes"] = usage.bytes;
    allocators.append(entry);
    buffers += usage.buffers;
    bytes += usage.bytes;
  }
  py::dict out;
  out["allocators"] = allocators;
  out["buffers"] = buffers;
  out["bytes"] = bytes;
  out["fallbacks"] = io.fallbacks;
  out["fallback_bytes"] = io.fallback_bytes;
  return out;
}

class Runner {
 public:
  Runner(const std::string& path, const std::string& io_allocator, bool strict_io, int threads) {
    EngineOptions options;
    options.io_allocator = io_allocator;
    options.strict_io = strict_io;
    options.num_threads = threads;
    engine_options_ = options;
    EngineRuntime runtime = value_or_raise(builtin_engine_runtime());
    auto opened = [&] {
      py::gil_scoped_release release;
      return Engine::open(path, options, std::move(runtime));
    }();
    engine_ = value_or_raise(std::move(opened));
    tokenizer_ = value_or_raise(engine_->tokenizer());
    session_ = value_or_raise(engine_->new_session());
  }

  // Speculative decoding for every later generate(): a draft program (its path; empty: none, the
  // same engine flags and threads as the target) or prompt lookup (lookup > 0).
  void set_speculation(const std::string& draft, int lookup, int draft_max, float draft_p_min) {
    SpeculationOptions options;
    options.lookup_ngram = lookup;
    options.draft_max = draft_max;
    options.draft_p_min = draft_p_min;
    ok_or_raise(check_speculation_options(options));
    ok_or_raise(engine_->check_speculation());
    std::unique_ptr<Engine> draft_engine;
    std::unique_ptr<LlmSession> draft_session;
    if (!draft.empty()) {
      if (lookup > 0) {
        ok_or_raise(invalid_argument("give draft or lookup, not both"));
      }
      EngineOptions engine_options = engine_options_;
      engine_options.thread_pool = engine_->program()->shared_thread_pool();
      EngineRuntime runtime = value_or_raise(builtin_engine_runtime());
      auto opened = [&] {
        py::gil_scoped_release release;
        return Engine::open(draft, engine_options, std::move(runtime));
      }();
      if (!opened.ok()) {
        ok_or_raise(opened.status().with_context(str_cat("draft '", draft, "'")));
      }
      draft_engine = std::move(opened).value();
      ok_or_raise(engine_->check_draft(*draft_engine).with_context(str_cat("draft '", draft, "'")));
      draft_session = value_or_raise(draft_engine->new_session());
      options.draft = draft_session.get();
    }
    speculation_ = options;
    draft_session_ = std::move(draft_session);
    draft_engine_ = std::move(draft_engine);
  }

  // Generates; on_text (or None) receives each final piece of text. An exception it raises stops
  // generation and is raised here.
  py::dict generate(const std::string& prompt, const py::object& config, const py::object& on_text) {
    GenerationOptions options = generation_options(*engine_, config);
    options.speculation = speculation_;
    cancel_.store(false);
    options.cancel = &cancel_;
    std::optional<py::error_already_set> callback_error;
    TextCallback callback;
    if (!on_text.is_none()) {
      callback = [&](std::string_view piece) {
        py::gil_scoped_acquire acquire;
        if (callback_error) {
          return;
        }
        try {
          on_text(py::str(piece.data(), piece.size()));
        } catch (py::error_already_set& error) {
          callback_error = std::move(error);
          cancel_.store(true);
        }
      };
    }
    auto result = [&] {
      py::gil_scoped_release release;
      return engine_->generate(*session_, prompt, options, callback);
    }();
    if (callback_error) {
      callback_error->restore();
      throw py::error_already_set();
    }
    const GenerationResult generated = value_or_raise(std::move(result));
    py::dict out;
    out["text"] = generated.text;
    out["tokens"] = generated.tokens;
    out["prompt_tokens"] = generated.prompt_tokens;
    if (options.top_logprobs >= 0) {
      py::list logprobs;
      for (const TokenLogprob& entry : generated.logprobs) {
        py::list top;
        for (const auto& [id, logprob] : entry.top) {
          top.append(py::make_tuple(id, logprob));
        }
        py::dict item;
        item["token"] = entry.token;
        item["logprob"] = entry.logprob;
        item["top"] = top;
        logprobs.append(item);
      }
      out["logprobs"] = logprobs;
    } else {
      out["logprobs"] = py::none();
    }
    out["finish_reason"] = finish_reason(generated.stop_reason);
    out["grammar_complete"] =
        generated.grammar_complete ? py::object(py::bool_(*generated.grammar_complete)) : py::object(py::none());
    py::dict stats;
    stats["prompt_tokens"] = generated.prompt_tokens.size();
    stats["cached_prompt_tokens"] = generated.cached_prompt_tokens;
    stats["generated_tokens"] = generated.tokens.size();
    stats["load_seconds"] = engine_->load_seconds();
    stats["prefill_seconds"] = generated.prefill_seconds;
    stats["time_to_first_token_seconds"] = generated.time_to_first_token_seconds;
    stats["decode_seconds"] = generated.decode_seconds;
    stats["decode_steps"] = generated.decode_steps;
    py::dict speculation;
    speculation["drafted"] = generated.speculation.drafted;
    speculation["accepted"] = generated.speculation.accepted;
    speculation["checks"] = generated.speculation.checks;
    stats["speculation"] = speculation;
    stats["peak_rss_bytes"] = generated.peak_rss_bytes;
    stats["io_allocator"] = engine_->io_allocator();
    stats["io"] = io_dict(generated.io);
    stats["sampling"] = sampling_dict(options.sampling);
    out["stats"] = stats;
    return out;
  }

  // Feeds the prompt from an empty cache; returns the last position's logits.
  py::array_t<float> prefill(const std::string& prompt) {
    const std::vector<int32_t> tokens = value_or_raise(tokenizer_->encode(prompt, EncodeOptions{}));
    py::array_t<float> logits(static_cast<py::ssize_t>(session_->vocab_size()));
    float* out = logits.mutable_data();
    const int64_t last = static_cast<int64_t>(tokens.size()) - 1;
    Status status;
    {
      py::gil_scoped_release release;
      session_->reset();
      status = session_->prefill(
          tokens,
          [&](int64_t index, std::span<const float> row) {
            if (index == last) {
              std::copy(row.begin(), row.end(), out);
            }
          },
          PrefillLogits::kLast);
    }
    ok_or_raise(status);
    return logits;
  }

  // The embedding of `text`, or of `ids` when text is None (llm/embedding.h): pooled as `pooling`
  // says (empty: the program's choice), or with "none" every token's hidden state [n, hidden];
  // each vector L2-normalised when `normalize`.
  py::array_t<float> embed(const std::optional<std::string>& text, const std::vector<int64_t>& ids,
                           const std::string& pooling, bool normalize) {
    std::vector<int32_t> tokens;
    if (text) {
      tokens = value_or_raise(tokenizer_->encode(*text, EncodeOptions{}));
    }
    for (int64_t id : ids) {
      if (id < 0 || id >= session_->vocab_size()) {  // before the narrowing to int32
        ok_or_raise(invalid_argument("token id ", id, " is outside the vocabulary [0, ", session_->vocab_size(), ")"));
      }
      tokens.push_back(static_cast<int32_t>(id));
    }
    EmbeddingOptions options;
    options.normalize = normalize;
    if (!pooling.empty()) {
      options.pooling = value_or_raise(parse_pooling(pooling));
    }
    Result<std::vector<float>> embedded = std::vector<float>();
    {
      py::gil_scoped_release release;
      embedded = embed_tokens(*session_, tokens, options);
    }
    const std::vector<float> values = value_or_raise(std::move(embedded));
    const auto width = static_cast<py::ssize_t>(session_->hidden_size());
    py::array_t<float> out = options.pooling == Pooling::kNone
                                 ? py::array_t<float>({static_cast<py::ssize_t>(tokens.size()), width})
                                 : py::array_t<float>(width);
    std::copy(values.begin(), values.end(), out.mutable_data());
    return out;
  }

  // Writes the session's cached tokens and caches to `path` (llm/session_file.h).
  void save_session(const std::string& path) {
    Status status;
    {
      py::gil_scoped_release release;
      status = save_session_file(*session_, engine_->file(), path);
    }
    ok_or_raise(status);
  }

  // Replaces the session's cache with the file's; returns the tokens it holds now.
  int64_t restore_session(const std::string& path) {
    Status status;
    {
      py::gil_scoped_release release;
      status = restore_session_file(*session_, engine_->file(), path);
    }
    ok_or_raise(status);
    return session_->position();
  }

  std::vector<int32_t> cached_tokens() const {
    const std::span<const int32_t> tokens = session_->cached_tokens();
    return {tokens.begin(), tokens.end()};
  }

  void reset() { session_->reset(); }
  // Asks a generation in progress to stop after the token being generated; any thread.
  void stop() { cancel_.store(true); }
  int64_t position() const { return session_->position(); }
  const LlmSession& session() const { return *session_; }
  int64_t max_cache_len() const { return session_->max_cache_len(); }
  std::string io_allocator() const { return engine_->io_allocator(); }
  py::dict io_stats() const { return io_dict(session_->io_stats()); }
  std::string contract() const { return str_cat(engine_->contract().name(), " v", engine_->contract().version()); }
  const Tokenizer& tokenizer() const { return *tokenizer_; }

 private:
  std::unique_ptr<Engine> engine_;
  const Tokenizer* tokenizer_ = nullptr;
  std::unique_ptr<LlmSession> session_;
  EngineOptions engine_options_;
  // Declared engine first: the draft's session goes before its engine.
  std::unique_ptr<Engine> draft_engine_;
  std::unique_ptr<LlmSession> draft_session_;
  SpeculationOptions speculation_;
  std::atomic<bool> cancel_{false};
};

Result<std::string> read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return not_found("'", path.string(), "': cannot open the file");
  }
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// A tokenizer.json (with the tokenizer_config.json beside it), a tokenizer.model, or a directory
// holding one (tokenizer.json first, as load_tokenizer_from_dir).
Result<std::unique_ptr<Tokenizer>> load_tokenizer_from_path(const std::string& path) {
  const std::filesystem::path file(path);
  if (std::filesystem::is_directory(file)) {
    return load_tokenizer_from_dir(path);
  }
  if (file.extension() == ".model") {
    STATICLM_ASSIGN_OR_RETURN(std::string bytes, read_file(file));
    return load_sentencepiece_model(std::span(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()));
  }
  if (file.extension() != ".json") {
    return invalid_argument("'", path, "': expected a tokenizer.json, a tokenizer .model or a directory");
  }
  STATICLM_ASSIGN_OR_RETURN(std::string json, read_file(file));
  const std::filesystem::path config = file.parent_path() / "tokenizer_config.json";
  std::optional<std::string> config_text;
  if (std::filesystem::exists(config)) {
    STATICLM_ASSIGN_OR_RETURN(config_text, read_file(config));
  }
  return load_tokenizer_json(json, config_text ? std::optional<std::string_view>(*config_text) : std::nullopt);
}

// A tokenizer the Python object owns, or one a runner owns (kept alive by the runner).
struct PyTokenizer {
  std::shared_ptr<const Tokenizer> tokenizer;
};

PyTokenizer tokenizer_of(Runner& runner, py::object owner) {
  // The runner outlives this view: the shared_ptr's deleter holds a reference to it.
  const Tokenizer* raw = &runner.tokenizer();
  return PyTokenizer{std::shared_ptr<const Tokenizer>(raw, [owner = std::move(owner)](const Tokenizer*) mutable {
    py::gil_scoped_acquire acquire;
    owner = py::none();
  })};
}

}  // namespace

void register_runner(py::module_& m) {
  py::class_<PyTokenizer>(m, "Tokenizer", "A tokenizer: Hugging Face tokenizer.json or SentencePiece .model.")
      .def_static(
          "from_file",
          [](const std::string& path) {
            return PyTokenizer{std::shared_ptr<const Tokenizer>(value_or_raise(load_tokenizer_from_path(path)))};
          },
          py::arg("path"),
          "Loads a tokenizer.json (with the tokenizer_config.json beside it), a tokenizer.model, or a "
          "directory holding one.")
      .def_static(
          "from_program",
          [](const std::string& path) {
            const auto file = value_or_raise(ProgramFile::open(path));
            return PyTokenizer{std::shared_ptr<const Tokenizer>(value_or_raise(load_program_tokenizer(*file)))};
          },
          py::arg("path"), "The tokenizer a program file embeds.")
      .def(
          "encode",
          [](const PyTokenizer& t, const std::string& text, bool add_special_tokens, bool parse_special) {
            EncodeOptions options;
            options.add_special_tokens = add_special_tokens;
            options.parse_special = parse_special;
            return value_or_raise(t.tokenizer->encode(text, options));
          },
          py::arg("text"), py::kw_only(), py::arg("add_special_tokens") = true, py::arg("parse_special") = true,
          "Token ids of `text` (BOS etc. as the tokenizer defines, with add_special_tokens).")
      .def(
          "decode",
          [](const PyTokenizer& t, const std::vector<int32_t>& ids, bool skip_special) {
            return value_or_raise(t.tokenizer->decode(ids, skip_special));
          },
          py::arg("ids"), py::kw_only(), py::arg("skip_special") = true,
          "Text of `ids` (ill-formed UTF-8 repaired); Error (OutOfRange) for an id outside the vocabulary.")
      .def_property_readonly(
          "vocab_size", [](const PyTokenizer& t) { return t.tokenizer->vocab_size(); }, "Tokens in the vocabulary.")
      .def_property_readonly(
          "bos_id", [](const PyTokenizer& t) { return t.tokenizer->bos_id(); }, "The BOS id, or None.")
      .def_property_readonly(
          "eos_ids", [](const PyTokenizer& t) { return t.tokenizer->eos_ids(); }, "The end-of-sequence ids.")
      .def(
          "token_to_id", [](const PyTokenizer& t, const std::string& token) { return t.tokenizer->token_to_id(token); },
          py::arg("token"), "The id of a token string, or None.")
      .def(
          "id_to_token", [](const PyTokenizer& t, int32_t id) { return value_or_raise(t.tokenizer->id_to_token(id)); },
          py::arg("id"), "The token string of an id.")
      .def(
          "is_special", [](const PyTokenizer& t, int32_t id) { return t.tokenizer->is_special(id); }, py::arg("id"),
          "Whether an id is a special token.");

  py::class_<Runner>(m, "_Runner", "An engine and one session over a program (see staticlm.TextLLMRunner).")
      .def(py::init<const std::string&, const std::string&, bool, int>(), py::arg("path"), py::arg("io_allocator"),
           py::arg("strict_io"), py::arg("threads"))
      .def("generate", &Runner::generate, py::arg("prompt"), py::arg("config"), py::arg("on_text"))
      .def("set_speculation", &Runner::set_speculation, py::arg("draft"), py::arg("lookup"), py::arg("draft_max"),
           py::arg("draft_p_min"))
      .def("prefill", &Runner::prefill, py::arg("prompt"))
      .def("embed", &Runner::embed, py::arg("text"), py::arg("ids"), py::arg("pooling"), py::arg("normalize"))
      .def_property_readonly("hidden_size", [](const Runner& runner) { return runner.session().hidden_size(); })
      .def_property_readonly("embedding_pooling",
                             [](const Runner& runner) { return std::string(runner.session().embedding_pooling()); })
      .def("save_session", &Runner::save_session, py::arg("path"))
      .def("restore_session", &Runner::restore_session, py::arg("path"))
      .def_property_readonly("cached_tokens", &Runner::cached_tokens)
      .def("reset", &Runner::reset)
      .def("stop", &Runner::stop, py::call_guard<py::gil_scoped_release>())
      .def_property_readonly("position", &Runner::position)
      .def_property_readonly("max_cache_len", &Runner::max_cache_len)
      .def_property_readonly("io_allocator", &Runner::io_allocator)
      .def_property_readonly("contract", &Runner::contract)
      .def("io_stats", &Runner::io_stats)
      .def("tokenizer", [](py::object self) { return tokenizer_of(self.cast<Runner&>(), self); });
}

}  // namespace staticlm::python
