// SPDX-License-Identifier: Apache-2.0
#include "staticlm/llm/tokenizer/token_decoder.h"

#include "staticlm/llm/tokenizer/byte_level.h"
#include "staticlm/llm/tokenizer/normalizer.h"
#include "staticlm/llm/tokenizer/regex.h"

namespace staticlm {
namespace {

constexpr std::string_view kSupported = "ByteLevel, Metaspace, Replace, ByteFallback, Fuse, Strip, Sequence";

class ByteLevelDecoder final : public TokenDecoder {
 public:
  Status decode_chain(std::vector<DecodePiece>& pieces) const override {
    std::string bytes;
    for (const DecodePiece& piece : pieces) {
      std::optional<std::string> decoded = piece.is_added ? std::nullopt : byte_level_decode(piece.text);
      bytes += decoded ? *decoded : piece.text;
    }
    pieces.assign(1, DecodePiece{std::move(bytes), false});
    return ok_status();
  }
};

class MetaspaceDecoder final : public TokenDecoder {
 public:
  MetaspaceDecoder(std::string replacement, bool strip_first_space)
      : replacement_(std::move(replacement)), strip_first_space_(strip_first_space) {}

  Status decode_chain(std::vector<DecodePiece>& pieces) const override {
    TextPattern pattern = TextPattern::literal(replacement_);
    for (size_t i = 0; i < pieces.size(); ++i) {
      STATICLM_ASSIGN_OR_RETURN(pieces[i].text, pattern.replace_all(pieces[i].text, " "));
      if (i == 0 && strip_first_space_ && !pieces[i].text.empty() && pieces[i].text[0] == ' ') {
        pieces[i].text.erase(0, 1);
      }
    }
    return ok_status();
  }

 private:
  std::string replacement_;
  bool strip_first_space_;
};

class ReplaceDecoder final : public TokenDecoder {
 public:
  ReplaceDecoder(TextPattern pattern, std::string content)
      : pattern_(std::move(pattern)), content_(std::move(content)) {}
  Status decode_chain(std::vector<DecodePiece>& pieces) const override {
    for (DecodePiece& piece : pieces) {
      STATICLM_ASSIGN_OR_RETURN(piece.text, pattern_.replace_all(piece.text, content_));
    }
    return ok_status();
  }

 private:
  TextPattern pattern_;
  std::string content_;
};

class ByteFallbackDecoder final : public TokenDecoder {
 public:
  Status decode_chain(std::vector<DecodePiece>& pieces) const override {
    std::vector<DecodePiece> out;
    out.reserve(pieces.size());
    std::string bytes;
    bool in_bytes = false;
    for (DecodePiece& piece : pieces) {
      int byte = piece.is_added ? -1 : parse_byte_token(piece.text);
      if (byte >= 0) {
        bytes.push_back(static_cast<char>(byte));
        in_bytes = true;
        continue;
      }
      if (in_bytes) {
        out.push_back({std::move(bytes), false});
        bytes.clear();
        in_bytes = false;
      }
      out.push_back(std::move(piece));
    }
    if (in_bytes) out.push_back({std::move(bytes), false});
    pieces = std::move(out);
    return ok_status();
  }
};

class FuseDecoder final : public TokenDecoder {
 public:
  Status decode_chain(std::vector<DecodePiece>& pieces) const override {
    std::string joined;
    for (const DecodePiece& piece : pieces) joined += piece.text;
    pieces.assign(1, DecodePiece{std::move(joined), false});
    return ok_status();
  }
};

class StripDecoder final : public TokenDecoder {
 public:
  StripDecoder(std::string content, size_t start, size_t stop)
      : content_(std::move(content)), start_(start), stop_(stop) {}
  Status decode_chain(std::vector<DecodePiece>& pieces) const override {
    for (DecodePiece& piece : pieces) {
      std::string_view text = piece.text;
      for (size_t i = 0; i < start_ && text.substr(0, content_.size()) == content_; ++i) {
        text.remove_prefix(content_.size());
      }
      for (size_t i = 0;
           i < stop_ && text.size() >= content_.size() && text.substr(text.size() - content_.size()) == content_; ++i) {
        text.remove_suffix(content_.size());
      }
      piece.text = std::string(text);
    }
    return ok_status();
  }

 private:
  std::string content_;
  size_t start_;
  size_t stop_;
};

class SequenceDecoder final : public TokenDecoder {
 public:
  explicit SequenceDecoder(std::vector<std::unique_ptr<TokenDecoder>> steps) : steps_(std::move(steps)) {}
  Status decode_chain(std::vector<DecodePiece>& pieces) const override {
    for (const auto& step : steps_) {
      STATICLM_RETURN_IF_ERROR(step->decode_chain(pieces));
    }
    return ok_status();
  }

 private:
  std::vector<std::unique_ptr<TokenDecoder>> steps_;
};

}  // namespace

Result<std::unique_ptr<TokenDecoder>> make_token_decoder(const Json& config, std::string_view where) {
  if (config.is_null()) return std::unique_ptr<TokenDecoder>();
  STATICLM_ASSIGN_OR_RETURN(std::string type, read_component_type(config, where));
  if (type == "ByteLevel") return std::unique_ptr<TokenDecoder>(new ByteLevelDecoder());
  if (type == "ByteFallback") return std::unique_ptr<TokenDecoder>(new ByteFallbackDecoder());
  if (type == "Fuse") return std::unique_ptr<TokenDecoder>(new FuseDecoder());
  if (type == "Metaspace") {
    STATICLM_ASSIGN_OR_RETURN(std::string replacement, read_single_char(config, "replacement", "\u2581", where));
    STATICLM_ASSIGN_OR_RETURN(std::optional<std::string> scheme, read_optional_string(config, "prepend_scheme", where));
    bool strip_first_space = true;
    if (scheme) {
      if (*scheme != "always" && *scheme != "first" && *scheme != "never") {
        return invalid_argument(field_name(where, "prepend_scheme"), ": '", *scheme,
                                "' is not one of always, first, never");
      }
      strip_first_space = *scheme != "never";
    } else {
      STATICLM_ASSIGN_OR_RETURN(strip_first_space, read_bool(config, "add_prefix_space", true, where));
    }
    return std::unique_ptr<TokenDecoder>(new MetaspaceDecoder(std::move(replacement), strip_first_space));
  }
  if (type == "Replace") {
    STATICLM_ASSIGN_OR_RETURN(TextPattern pattern, read_text_pattern(config, "pattern", where));
    STATICLM_ASSIGN_OR_RETURN(std::string content, read_string(config, "content", where));
    return std::unique_ptr<TokenDecoder>(new ReplaceDecoder(std::move(pattern), std::move(content)));
  }
  if (type == "Strip") {
    STATICLM_ASSIGN_OR_RETURN(std::string content, read_single_char(config, "content", " ", where));
    STATICLM_ASSIGN_OR_RETURN(int64_t start, read_int(config, "start", 0, 0, 1 << 20, where));
    STATICLM_ASSIGN_OR_RETURN(int64_t stop, read_int(config, "stop", 0, 0, 1 << 20, where));
    return std::unique_ptr<TokenDecoder>(
        new StripDecoder(std::move(content), static_cast<size_t>(start), static_cast<size_t>(stop)));
  }
  if (type == "Sequence") {
    STATICLM_ASSIGN_OR_RETURN(const Json* items, read_array(config, "decoders", where));
    std::vector<std::unique_ptr<TokenDecoder>> steps;
    for (size_t i = 0; i < items->size(); ++i) {
      STATICLM_ASSIGN_OR_RETURN(std::unique_ptr<TokenDecoder> step,
                                make_token_decoder((*items)[i], str_cat(where, ".decoders[", i, "]")));
      if (step) steps.push_back(std::move(step));
    }
    return std::unique_ptr<TokenDecoder>(new SequenceDecoder(std::move(steps)));
  }
  return unimplemented(where, " type '", type, "' is not supported (supported: ", kSupported, ")");
}

}  // namespace staticlm
