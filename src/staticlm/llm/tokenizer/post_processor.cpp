// SPDX-License-Identifier: Apache-2.0
#include "staticlm/llm/tokenizer/post_processor.h"

#include <string>

namespace staticlm {
namespace {

constexpr std::string_view kSupported = "TemplateProcessing, ByteLevel, RobertaProcessing, BertProcessing, Sequence";

// The ids a template's SpecialToken item stands for, from the template's own table.
Result<std::vector<int32_t>> special_token_ids(const Json& config, const std::string& name, std::string_view where) {
  const Json* table = find_member(config, "special_tokens");
  const Json* entry = table == nullptr ? nullptr : find_member(*table, name);
  if (entry == nullptr) {
    return invalid_argument(where, ": the template uses special token '", name,
                            "' that special_tokens does not define");
  }
  std::string entry_where = str_cat(where, ".special_tokens[\"", name, "\"]");
  STATICLM_ASSIGN_OR_RETURN(const Json* ids, read_array(*entry, "ids", entry_where));
  std::vector<int32_t> out;
  for (const Json& id : *ids) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() >= kMaxTokenId) {
      return invalid_argument(entry_where, ".ids: expected token ids, found ", json_preview(id));
    }
    out.push_back(static_cast<int32_t>(id.get<int64_t>()));
  }
  return out;
}

// One template item is {"SpecialToken": {"id": ...}} / {"Sequence": {"id": "A"}}, or in the
// short string form "$A", "$B:1", "<s>", "[CLS]:0".
struct TemplateItem {
  bool is_sequence = false;
  std::string name;
};

Result<TemplateItem> read_template_item(const Json& item, std::string_view where) {
  if (item.is_string()) {
    std::string text = item.get<std::string>();
    size_t colon = text.rfind(':');
    if (colon != std::string::npos && colon > 0) text.resize(colon);
    if (!text.empty() && text[0] == '$') return TemplateItem{true, text.substr(1)};
    return TemplateItem{false, text};
  }
  if (const Json* special = find_member(item, "SpecialToken")) {
    STATICLM_ASSIGN_OR_RETURN(std::string id, read_string(*special, "id", field_name(where, "SpecialToken")));
    return TemplateItem{false, id};
  }
  if (const Json* sequence = find_member(item, "Sequence")) {
    STATICLM_ASSIGN_OR_RETURN(std::string id, read_string(*sequence, "id", field_name(where, "Sequence")));
    return TemplateItem{true, id};
  }
  return invalid_argument(where, ": expected a SpecialToken or Sequence item, found ", json_preview(item));
}

Result<SpecialTokenTemplate> read_template(const Json& config, std::string_view where) {
  const Json* single = find_member(config, "single");
  if (single == nullptr) return invalid_argument(field_name(where, "single"), ": required template is missing");
  std::vector<Json> items;
  if (single->is_string()) {
    // "<s> $A" – the whole template as one space-separated string.
    std::string text = single->get<std::string>();
    size_t pos = 0;
    while (pos < text.size()) {
      size_t space = text.find(' ', pos);
      if (space == std::string::npos) space = text.size();
      if (space > pos) items.emplace_back(text.substr(pos, space - pos));
      pos = space + 1;
    }
  } else if (single->is_array()) {
    items.assign(single->begin(), single->end());
  } else {
    return invalid_argument(field_name(where, "single"), ": expected an array or a string, found ",
                            json_preview(*single));
  }
  SpecialTokenTemplate result;
  bool seen_sequence = false;
  for (size_t i = 0; i < items.size(); ++i) {
    std::string item_where = str_cat(where, ".single[", i, "]");
    STATICLM_ASSIGN_OR_RETURN(TemplateItem item, read_template_item(items[i], item_where));
    if (item.is_sequence) {
      if (item.name != "A" && item.name != "0" && !item.name.empty()) {
        return invalid_argument(item_where, ": the single-sequence template refers to sequence '", item.name,
                                "'; expected A");
      }
      if (seen_sequence) return invalid_argument(item_where, ": sequence A appears twice");
      seen_sequence = true;
      continue;
    }
    STATICLM_ASSIGN_OR_RETURN(std::vector<int32_t> ids, special_token_ids(config, item.name, where));
    auto& target = seen_sequence ? result.suffix : result.prefix;
    target.insert(target.end(), ids.begin(), ids.end());
  }
  if (!seen_sequence) return invalid_argument(field_name(where, "single"), ": the template never places sequence A");
  return result;
}

// RobertaProcessing / BertProcessing give "cls": ["<s>", 0] and "sep": ["</s>", 2].
Result<int32_t> read_named_id(const Json& config, std::string_view key, std::string_view where) {
  const Json* pair = find_member(config, key);
  if (pair == nullptr || !pair->is_array() || pair->size() != 2 || !(*pair)[1].is_number_integer() ||
      (*pair)[1].get<int64_t>() < 0 || (*pair)[1].get<int64_t>() >= kMaxTokenId) {
    return invalid_argument(field_name(where, key), ": expected [\"token\", id], found ",
                            pair == nullptr ? std::string("nothing") : json_preview(*pair));
  }
  return static_cast<int32_t>((*pair)[1].get<int64_t>());
}

}  // namespace

Result<SpecialTokenTemplate> read_post_processor(const Json& config, std::string_view where) {
  if (config.is_null()) return SpecialTokenTemplate{};
  STATICLM_ASSIGN_OR_RETURN(std::string type, read_component_type(config, where));
  if (type == "ByteLevel") return SpecialTokenTemplate{};
  if (type == "TemplateProcessing") return read_template(config, where);
  if (type == "RobertaProcessing" || type == "BertProcessing") {
    STATICLM_ASSIGN_OR_RETURN(int32_t cls, read_named_id(config, "cls", where));
    STATICLM_ASSIGN_OR_RETURN(int32_t sep, read_named_id(config, "sep", where));
    return SpecialTokenTemplate{{cls}, {sep}};
  }
  if (type == "Sequence") {
    STATICLM_ASSIGN_OR_RETURN(const Json* items, read_array(config, "processors", where));
    SpecialTokenTemplate combined;
    for (size_t i = 0; i < items->size(); ++i) {
      STATICLM_ASSIGN_OR_RETURN(SpecialTokenTemplate step,
                                read_post_processor((*items)[i], str_cat(where, ".processors[", i, "]")));
      // A later processor wraps the output of the earlier ones.
      combined.prefix.insert(combined.prefix.begin(), step.prefix.begin(), step.prefix.end());
      combined.suffix.insert(combined.suffix.end(), step.suffix.begin(), step.suffix.end());
    }
    return combined;
  }
  return unimplemented(where, " type '", type, "' is not supported (supported: ", kSupported, ")");
}

}  // namespace staticlm
