// SPDX-License-Identifier: Apache-2.0
#include "staticlm/llm/tokenizer/normalizer.h"

#include <cstdlib>
#include <vector>

#include <utf8proc.h>

#include "staticlm/core/utf8.h"
#include "staticlm/llm/tokenizer/regex.h"

namespace staticlm {
namespace {

constexpr std::string_view kSupported =
    "NFC, NFD, NFKC, NFKD, Lowercase, Prepend, Replace, Strip, StripAccents, Sequence";

class UnicodeFormNormalizer final : public Normalizer {
 public:
  UnicodeFormNormalizer(std::string form, utf8proc_option_t options) : form_(std::move(form)), options_(options) {}

  Result<std::string> normalize(std::string text) const override {
    utf8proc_uint8_t* mapped = nullptr;
    utf8proc_ssize_t length = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(text.data()),
                                           static_cast<utf8proc_ssize_t>(text.size()), &mapped, options_);
    if (length < 0) {
      return invalid_argument("normalizer ", form_, ": ", utf8proc_errmsg(length));
    }
    std::string out(reinterpret_cast<const char*>(mapped), static_cast<size_t>(length));
    std::free(mapped);
    return out;
  }

 private:
  std::string form_;
  utf8proc_option_t options_;
};

// Applies `map` to every code point (utf8proc's simple one-to-one case and accent data).
template <typename Map>
std::string map_code_points(std::string_view text, Map&& map) {
  std::string out;
  out.reserve(text.size());
  utf8_walk(text, [&](char32_t code_point, size_t, size_t) {
    map(code_point, out);
    return true;
  });
  return out;
}

class LowercaseNormalizer final : public Normalizer {
 public:
  Result<std::string> normalize(std::string text) const override {
    return map_code_points(text, [](char32_t code_point, std::string& out) {
      utf8_append(out, static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(code_point))));
    });
  }
};

class StripAccentsNormalizer final : public Normalizer {
 public:
  Result<std::string> normalize(std::string text) const override {
    return map_code_points(text, [](char32_t code_point, std::string& out) {
      if (utf8proc_category(static_cast<utf8proc_int32_t>(code_point)) != UTF8PROC_CATEGORY_MN) {
        utf8_append(out, code_point);
      }
    });
  }
};

class PrependNormalizer final : public Normalizer {
 public:
  explicit PrependNormalizer(std::string prefix) : prefix_(std::move(prefix)) {}
  Result<std::string> normalize(std::string text) const override {
    // Empty text stays empty, as in Hugging Face tokenizers.
    if (text.empty()) return text;
    return prefix_ + text;
  }

 private:
  std::string prefix_;
};

class ReplaceNormalizer final : public Normalizer {
 public:
  ReplaceNormalizer(TextPattern pattern, std::string content)
      : pattern_(std::move(pattern)), content_(std::move(content)) {}
  Result<std::string> normalize(std::string text) const override { return pattern_.replace_all(text, content_); }

 private:
  TextPattern pattern_;
  std::string content_;
};

class StripNormalizer final : public Normalizer {
 public:
  StripNormalizer(bool left, bool right) : left_(left), right_(right) {}
  Result<std::string> normalize(std::string text) const override {
    size_t begin = 0;
    size_t end = text.size();
    if (left_) {
      char32_t code_point = 0;
      size_t length = 0;
      while (begin < end && (length = utf8_decode_char(text, begin, code_point)) > 0 &&
             utf8_is_white_space(code_point)) {
        begin += length;
      }
    }
    if (right_) {
      while (end > begin) {
        size_t start = end - 1;
        while (start > begin && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) --start;
        char32_t code_point = 0;
        if (utf8_decode_char(text, start, code_point) == 0 || !utf8_is_white_space(code_point)) break;
        end = start;
      }
    }
    return text.substr(begin, end - begin);
  }

 private:
  bool left_;
  bool right_;
};

class SequenceNormalizer final : public Normalizer {
 public:
  explicit SequenceNormalizer(std::vector<std::unique_ptr<Normalizer>> steps) : steps_(std::move(steps)) {}
  Result<std::string> normalize(std::string text) const override {
    for (const auto& step : steps_) {
      STATICLM_ASSIGN_OR_RETURN(text, step->normalize(std::move(text)));
    }
    return text;
  }

 private:
  std::vector<std::unique_ptr<Normalizer>> steps_;
};

}  // namespace

Result<TextPattern> read_text_pattern(const Json& object, std::string_view key, std::string_view where) {
  std::string name = field_name(where, key);
  const Json* pattern = find_member(object, key);
  if (pattern == nullptr || !pattern->is_object()) {
    return invalid_argument(name, ": expected {\"String\": ...} or {\"Regex\": ...}, found ",
                            pattern == nullptr ? std::string("nothing") : json_preview(*pattern));
  }
  if (find_member(*pattern, "String") != nullptr) {
    STATICLM_ASSIGN_OR_RETURN(std::string literal, read_string(*pattern, "String", name));
    return TextPattern::literal(std::move(literal));
  }
  if (find_member(*pattern, "Regex") != nullptr) {
    STATICLM_ASSIGN_OR_RETURN(std::string source, read_string(*pattern, "Regex", name));
    STATICLM_ASSIGN_OR_RETURN(Regex regex, Regex::compile(source, name));
    return TextPattern::regex(std::move(regex));
  }
  return invalid_argument(name, ": expected {\"String\": ...} or {\"Regex\": ...}, found ", json_preview(*pattern));
}

Result<std::unique_ptr<Normalizer>> make_normalizer(const Json& config, std::string_view where) {
  if (config.is_null()) return std::unique_ptr<Normalizer>();
  STATICLM_ASSIGN_OR_RETURN(std::string type, read_component_type(config, where));
  constexpr auto kStable = UTF8PROC_STABLE;
  if (type == "NFC") {
    return std::unique_ptr<Normalizer>(
        new UnicodeFormNormalizer("NFC", static_cast<utf8proc_option_t>(kStable | UTF8PROC_COMPOSE)));
  }
  if (type == "NFD") {
    return std::unique_ptr<Normalizer>(
        new UnicodeFormNormalizer("NFD", static_cast<utf8proc_option_t>(kStable | UTF8PROC_DECOMPOSE)));
  }
  if (type == "NFKC") {
    return std::unique_ptr<Normalizer>(new UnicodeFormNormalizer(
        "NFKC", static_cast<utf8proc_option_t>(kStable | UTF8PROC_COMPOSE | UTF8PROC_COMPAT)));
  }
  if (type == "NFKD") {
    return std::unique_ptr<Normalizer>(new UnicodeFormNormalizer(
        "NFKD", static_cast<utf8proc_option_t>(kStable | UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT)));
  }
  if (type == "Lowercase") return std::unique_ptr<Normalizer>(new LowercaseNormalizer());
  if (type == "StripAccents") return std::unique_ptr<Normalizer>(new StripAccentsNormalizer());
  if (type == "Prepend") {
    STATICLM_ASSIGN_OR_RETURN(std::string prefix, read_string(config, "prepend", where));
    return std::unique_ptr<Normalizer>(new PrependNormalizer(std::move(prefix)));
  }
  if (type == "Replace") {
    STATICLM_ASSIGN_OR_RETURN(TextPattern pattern, read_text_pattern(config, "pattern", where));
    STATICLM_ASSIGN_OR_RETURN(std::string content, read_string(config, "content", where));
    return std::unique_ptr<Normalizer>(new ReplaceNormalizer(std::move(pattern), std::move(content)));
  }
  if (type == "Strip") {
    STATICLM_ASSIGN_OR_RETURN(bool left, read_bool(config, "strip_left", true, where));
    STATICLM_ASSIGN_OR_RETURN(bool right, read_bool(config, "strip_right", true, where));
    return std::unique_ptr<Normalizer>(new StripNormalizer(left, right));
  }
  if (type == "Sequence") {
    STATICLM_ASSIGN_OR_RETURN(const Json* items, read_array(config, "normalizers", where));
    std::vector<std::unique_ptr<Normalizer>> steps;
    for (size_t i = 0; i < items->size(); ++i) {
      STATICLM_ASSIGN_OR_RETURN(std::unique_ptr<Normalizer> step,
                                make_normalizer((*items)[i], str_cat(where, ".normalizers[", i, "]")));
      if (step) steps.push_back(std::move(step));
    }
    return std::unique_ptr<Normalizer>(new SequenceNormalizer(std::move(steps)));
  }
  return unimplemented(where, " type '", type, "' is not supported (supported: ", kSupported, ")");
}

}  // namespace staticlm
