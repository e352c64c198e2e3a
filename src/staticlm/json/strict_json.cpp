// SPDX-License-Identifier: Apache-2.0
#include "staticlm/json/strict_json.h"

#include <algorithm>
#include <new>
#include <set>
#include <utility>
#include <vector>

namespace staticlm {
namespace {

using nlohmann::json;

// One object being parsed: the keys seen so far and the most recent one, which names the
// object's children in a duplicate-key message.
struct OpenObject {
  std::set<std::string, std::less<>> keys;
  std::string last_key;
};

}  // namespace

Result<json> parse_json_object(std::string_view text, std::string_view file) {
  std::vector<OpenObject> open_objects;
  std::string duplicate_message;
  json::parser_callback_t on_event = [&](int /*depth*/, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start: open_objects.emplace_back(); break;
      case json::parse_event_t::object_end:
        if (!open_objects.empty()) {
          open_objects.pop_back();
        }
        break;
      case json::parse_event_t::key: {
        if (open_objects.empty() || !parsed.is_string()) {
          break;
        }
        OpenObject& current = open_objects.back();
        const std::string& key = parsed.get_ref<const std::string&>();
        if (!current.keys.insert(key).second && duplicate_message.empty()) {
          if (open_objects.size() == 1) {
            duplicate_message = str_cat("'", file, "': key '", key, "' appears twice at the top level");
          } else {
            const std::string& parent = open_objects[open_objects.size() - 2].last_key;
            duplicate_message =
                str_cat("'", file, "': key '", key, "' appears twice in the object under '", parent, "'");
          }
        }
        current.last_key = key;
        break;
      }
      default: break;
    }
    return true;
  };

  json document;
  try {
    document = json::parse(text.begin(), text.end(), on_event, /*allow_exceptions=*/true,
                           /*ignore_comments=*/false);
  } catch (const json::exception& error) {
    return invalid_argument("'", file, "': not valid JSON: ", error.what());
  } catch (const std::bad_alloc&) {
    return resource_exhausted("'", file, "': out of memory while parsing ", text.size(), " bytes of JSON");
  }
  if (!duplicate_message.empty()) {
    return invalid_argument(duplicate_message);
  }
  if (!document.is_object()) {
    return invalid_argument("'", file, "': expected a JSON object at the top level, found ", document.type_name());
  }
  return document;
}

std::string json_preview(const json& value) {
  constexpr size_t kMaxPreview = 60;
  std::string text = value.dump(-1, ' ', /*ensure_ascii=*/true, json::error_handler_t::replace);
  if (text.size() > kMaxPreview) {
    text.resize(kMaxPreview);
    text += "...";
  }
  return text;
}

int json_nesting_depth(std::string_view text) {
  int depth = 0;
  int deepest = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return deepest;
}

}  // namespace staticlm
