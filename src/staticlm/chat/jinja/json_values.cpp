// SPDX-License-Identifier: Apache-2.0
#include "staticlm/chat/jinja/json_values.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "staticlm/core/utf8.h"

namespace staticlm::jinja {
namespace {

void append_json_string(std::string& out, std::string_view text, bool ensure_ascii) {
  out += '"';
  utf8_walk(text, [&](char32_t code_point, size_t pos, size_t length) {
    char buffer[16];
    switch (code_point) {
      case U'"': out += "\\\""; return true;
      case U'\\': out += "\\\\"; return true;
      case U'\n': out += "\\n"; return true;
      case U'\r': out += "\\r"; return true;
      case U'\t': out += "\\t"; return true;
      case U'\b': out += "\\b"; return true;
      case U'\f': out += "\\f"; return true;
      default: break;
    }
    if (code_point < 0x20 || (ensure_ascii && code_point > 0x7E)) {
      if (code_point >= 0x10000) {
        const char32_t v = code_point - 0x10000;
        std::snprintf(buffer, sizeof(buffer), "\\u%04x\\u%04x", static_cast<unsigned>(0xD800 + (v >> 10)),
                      static_cast<unsigned>(0xDC00 + (v & 0x3FF)));
      } else {
        std::snprintf(buffer, sizeof(buffer), "\\u%04x", static_cast<unsigned>(code_point));
      }
      out += buffer;
      return true;
    }
    out.append(text.substr(pos, length == 0 ? 1 : length));
    return true;
  });
  out += '"';
}

class JsonWriter {
 public:
  explicit JsonWriter(const JsonDumpOptions& options)
      : options_(options),
        item_separator_(options.item_separator.value_or(options.indent ? "," : ", ")),
        key_separator_(options.key_separator.value_or(": ")) {}

  Status write(const Value& value, int level) {
    if (value.is_none()) {
      out_ += "null";
    } else if (value.is_bool()) {
      out_ += value.as_bool() ? "true" : "false";
    } else if (value.is_int()) {
      out_ += std::to_string(value.as_int());
    } else if (value.is_float()) {
      const double d = value.as_float();
      out_ += std::isnan(d) ? "NaN" : (std::isinf(d) ? (d < 0 ? "-Infinity" : "Infinity") : python_float_repr(d));
    } else if (value.is_string()) {
      append_json_string(out_, value.as_string(), options_.ensure_ascii);
    } else if (value.is_list()) {
      const auto& items = value.as_list().items;
      return write_container('[', ']', items.size(), level, [&](size_t i) { return write(items[i], level + 1); });
    } else if (value.is_dict()) {
      std::vector<const std::pair<std::string, Value>*> items;
      for (const auto& item : value.as_dict().items) {
        items.push_back(&item);
      }
      if (options_.sort_keys) {
        std::stable_sort(items.begin(), items.end(), [](const auto* a, const auto* b) { return a->first < b->first; });
      }
      return write_container('{', '}', items.size(), level, [&](size_t i) {
        append_json_string(out_, items[i]->first, options_.ensure_ascii);
        out_ += key_separator_;
        return write(items[i]->second, level + 1);
      });
    } else {
      return invalid_argument("Object of type ", value.type_name(), " is not JSON serializable");
    }
    return ok_status();
  }

  std::string take() { return std::move(out_); }

 private:
  template <typename WriteItem>
  Status write_container(char open, char close, size_t count, int level, WriteItem write_item) {
    out_ += open;
    if (count == 0) {
      out_ += close;
      return ok_status();
    }
    for (size_t i = 0; i < count; ++i) {
      if (i > 0) {
        out_ += item_separator_;
      }
      STATICLM_RETURN_IF_ERROR(new_line(level + 1));
      STATICLM_RETURN_IF_ERROR(write_item(i));
      STATICLM_RETURN_IF_ERROR(check_size(0));
    }
    STATICLM_RETURN_IF_ERROR(new_line(level));
    out_ += close;
    return ok_status();
  }

  Status new_line(int level) {
    if (!options_.indent) {
      return ok_status();
    }
    STATICLM_RETURN_IF_ERROR(check_size(1 + static_cast<size_t>(level) * options_.indent->size()));
    out_ += '\n';
    for (int i = 0; i < level; ++i) {
      out_ += *options_.indent;
    }
    return ok_status();
  }

  // Whether `more` bytes still fit; checked as the text grows, so a small value that expands
  // (a long string repeated in a list, a long indent) stops before it is built.
  Status check_size(size_t more) const {
    if (out_.size() > options_.max_bytes || more > options_.max_bytes - out_.size()) {
      return resource_exhausted("tojson: the JSON text passes the limit of ", options_.max_bytes, " bytes");
    }
    return ok_status();
  }

  const JsonDumpOptions& options_;
  std::string item_separator_;
  std::string key_separator_;
  std::string out_;
};

}  // namespace

Result<std::string> dump_json(const Value& value, const JsonDumpOptions& options) {
  JsonWriter writer(options);
  STATICLM_RETURN_IF_ERROR(writer.write(value, 0));
  std::string text = writer.take();
  if (text.size() > options.max_bytes) {
    return resource_exhausted("tojson: the JSON text passes the limit of ", options.max_bytes, " bytes");
  }
  return text;
}

Result<Value> value_from_json(const nlohmann::ordered_json& json, int max_depth) {
  if (json.is_object() || json.is_array()) {
    if (max_depth <= 0) {
      return invalid_argument("JSON nested too deeply for a template value");
    }
    if (json.is_array()) {
      std::vector<Value> items;
      items.reserve(json.size());
      for (const auto& item : json) {
        STATICLM_ASSIGN_OR_RETURN(Value value, value_from_json(item, max_depth - 1));
        items.push_back(std::move(value));
      }
      return Value::list(std::move(items));
    }
    std::vector<std::pair<std::string, Value>> items;
    items.reserve(json.size());
    for (const auto& [key, item] : json.items()) {
      STATICLM_ASSIGN_OR_RETURN(Value value, value_from_json(item, max_depth - 1));
      items.emplace_back(key, std::move(value));
    }
    return Value::dict(std::move(items));
  }
  if (json.is_null()) {
    return Value(NoneType{});
  }
  if (json.is_boolean()) {
    return Value(json.get<bool>());
  }
  if (json.is_number_integer() && !(json.is_number_unsigned() && json.get<uint64_t>() > INT64_MAX)) {
    return Value(json.get<int64_t>());
  }
  if (json.is_number()) {
    return Value(json.get<double>());
  }
  if (json.is_string()) {
    return Value(json.get<std::string>());
  }
  return invalid_argument("a JSON value of type ", json.type_name(), " has no template value");
}

}  // namespace staticlm::jinja
