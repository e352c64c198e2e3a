// SPDX-License-Identifier: Apache-2.0
#include "staticlm/chat/program_chat_template.h"

#include <algorithm>
#include <array>

#include "staticlm/core/mapped_file.h"
#include "staticlm/core/utf8.h"

namespace staticlm {
namespace {

// Markers real templates close a turn with. A model emits the one its template writes; where
// the tokenizer lacks it as a token (the ChatML default on a base model) it arrives as text.
constexpr std::array<std::string_view, 5> kTurnEndMarkers = {"<|im_end|>", "<|eot_id|>", "<end_of_turn>", "<|end|>",
                                                             "<｜end▁of▁sentence｜>"};
// A base model chatted with ChatML tends to write the next turn itself: stop where it starts.
constexpr std::string_view kChatMlTurnStart = "<|im_start|>";

std::string_view as_text(std::span<const uint8_t> bytes) {
  return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
}

struct TemplateText {
  std::string source;
  std::string origin;
  bool is_default = false;
};

Result<TemplateText> find_template_text(const ProgramFile& file, const std::string& override_path) {
  if (!override_path.empty()) {
    STATICLM_ASSIGN_OR_RETURN(std::string text, read_text_file(override_path));
    return TemplateText{std::move(text), str_cat("'", override_path, "'")};
  }
  if (auto embedded = file.embedded_file(kEmbeddedChatTemplate)) {
    return TemplateText{std::string(as_text(*embedded)),
                        str_cat("'", file.path(), "': embedded ", kEmbeddedChatTemplate)};
  }
  if (auto config = file.embedded_file("tokenizer_config.json")) {
    const std::string origin = str_cat("'", file.path(), "': embedded tokenizer_config.json");
    auto text = chat_template_from_tokenizer_config(as_text(*config), origin);
    if (text.ok()) {
      return TemplateText{std::move(*text), origin};
    }
    if (text.status().code() != StatusCode::kNotFound) {
      return text.status();
    }
  }
  return TemplateText{std::string(default_chat_template_source()), "staticlm's default (ChatML)", true};
}

}  // namespace

Result<std::optional<std::string>> program_chat_template_origin(const ProgramFile& file) {
  if (file.embedded_file(kEmbeddedChatTemplate)) {
    return std::optional<std::string>(str_cat("embedded ", kEmbeddedChatTemplate));
  }
  if (auto config = file.embedded_file("tokenizer_config.json")) {
    auto text = chat_template_from_tokenizer_config(as_text(*config),
                                                    str_cat("'", file.path(), "': embedded tokenizer_config.json"));
    if (text.ok()) {
      return std::optional<std::string>("embedded tokenizer_config.json");
    }
    if (text.status().code() != StatusCode::kNotFound) {
      return text.status();
    }
  }
  return std::optional<std::string>();
}

Result<ProgramChatTemplate> load_program_chat_template(const ProgramFile& file, const Tokenizer& tokenizer,
                                                       const std::string& override_path) {
  STATICLM_ASSIGN_OR_RETURN(TemplateText text, find_template_text(file, override_path));
  if (!utf8_is_valid(text.source)) {
    return invalid_argument("chat template (", text.origin, "): not valid UTF-8");
  }
  std::vector<std::pair<std::string, std::string>> special_tokens;
  if (auto config = file.embedded_file("tokenizer_config.json")) {
    STATICLM_ASSIGN_OR_RETURN(special_tokens,
                              special_tokens_from_tokenizer_config(
                                  as_text(*config), str_cat("'", file.path(), "': embedded tokenizer_config.json")));
  }
  // Without a tokenizer_config.json (a SentencePiece model alone), the tokenizer's own BOS / EOS.
  auto has = [&](std::string_view name) {
    return std::any_of(special_tokens.begin(), special_tokens.end(), [&](const auto& t) { return t.first == name; });
  };
  if (!has("bos_token") && tokenizer.bos_id()) {
    STATICLM_ASSIGN_OR_RETURN(std::string bos, tokenizer.id_to_token(*tokenizer.bos_id()));
    special_tokens.emplace_back("bos_token", std::move(bos));
  }
  if (!has("eos_token") && !tokenizer.eos_ids().empty()) {
    STATICLM_ASSIGN_OR_RETURN(std::string eos, tokenizer.id_to_token(tokenizer.eos_ids().front()));
    special_tokens.emplace_back("eos_token", std::move(eos));
  }
  STATICLM_ASSIGN_OR_RETURN(ChatTemplate parsed,
                            ChatTemplate::parse(std::move(text.source), text.origin, std::move(special_tokens)));
  ProgramChatTemplate out{std::move(parsed), text.is_default, "", {}, {}};
  if (text.is_default) {
    out.notice = str_cat("'", file.path(), "' carries no chat template; using ChatML (see docs/chat.md, or pass ",
                         "--chat-template FILE)");
  }
  std::vector<std::string_view> markers;
  for (std::string_view marker : kTurnEndMarkers) {
    if (out.chat_template.source().find(marker) != std::string::npos) {
      markers.push_back(marker);
    }
  }
  if (text.is_default) {
    markers.push_back(kChatMlTurnStart);
  }
  for (std::string_view marker : markers) {
    std::optional<int32_t> id = tokenizer.token_to_id(marker);
    if (id && tokenizer.is_special(*id)) {
      out.end_of_turn_ids.push_back(*id);
    } else {
      out.stop_strings.emplace_back(marker);
    }
  }
  return out;
}

}  // namespace staticlm
