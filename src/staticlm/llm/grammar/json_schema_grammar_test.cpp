// SPDX-License-Identifier: Apache-2.0
#include "staticlm/llm/grammar/json_schema_grammar.h"

#include <functional>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "staticlm/llm/grammar/compiled_grammar.h"
#include "staticlm/llm/grammar/grammar_matcher.h"
#include "staticlm/llm/grammar/grammar_test_util.h"

namespace staticlm {
namespace {

using Json = nlohmann::ordered_json;

using testing::byte_vocabulary;

std::shared_ptr<const CompiledGrammar> compile_schema(const std::string& schema) {
  Result<std::string> gbnf = json_schema_to_gbnf(std::string_view(schema));
  EXPECT_TRUE(gbnf.ok()) << gbnf.status().to_string() << "\n" << schema;
  if (!gbnf.ok()) {
    return nullptr;
  }
  Result<std::shared_ptr<const CompiledGrammar>> grammar = compile_gbnf(*gbnf, byte_vocabulary());
  EXPECT_TRUE(grammar.ok()) << grammar.status().to_string() << "\n" << *gbnf;
  return grammar.ok() ? *grammar : nullptr;
}

bool matches(const std::shared_ptr<const CompiledGrammar>& grammar, std::string_view text) {
  return testing::grammar_matches(grammar, text);
}

std::string refusal(const std::string& schema) {
  Result<std::string> gbnf = json_schema_to_gbnf(std::string_view(schema));
  EXPECT_FALSE(gbnf.ok()) << "compiled: " << schema;
  return gbnf.ok() ? "" : gbnf.status().message();
}

// Random texts the grammar allows, byte by byte; those that complete within `max_bytes`.
std::vector<std::string> sample_texts(const std::shared_ptr<const CompiledGrammar>& grammar, int count, uint64_t seed,
                                      size_t max_bytes = 400) {
  std::mt19937_64 rng(seed);
  std::vector<std::string> out;
  TokenBitmask mask(256);
  // Bytes that close what is open, chosen more often so that texts end.
  const std::string closing = "\"}],0123456789eftn";
  for (int i = 0; i < count; ++i) {
    GrammarMatcher matcher(grammar);
    std::string text;
    while (text.size() < max_bytes && !matcher.is_complete()) {
      if (matcher.can_end() && rng() % 4 == 0) {
        break;
      }
      EXPECT_TRUE(matcher.fill_mask(mask).ok());
      std::vector<int> allowed;
      std::vector<int> closers;
      for (int b = 0; b < 256; ++b) {
        if (mask.test(b)) {
          allowed.push_back(b);
          if (closing.find(static_cast<char>(b)) != std::string::npos) {
            closers.push_back(b);
          }
        }
      }
      if (allowed.empty()) {
        ADD_FAILURE() << "no byte continues '" << text << "'";
        break;
      }
      const std::vector<int>& pool = (!closers.empty() && rng() % 3 != 0) ? closers : allowed;
      const char byte = static_cast<char>(pool[rng() % pool.size()]);
      EXPECT_TRUE(matcher.accept_bytes(std::string(1, byte)));
      text += byte;
    }
    if (matcher.can_end()) {
      out.push_back(text);
    }
  }
  return out;
}

// Every sampled text parses as JSON and satisfies `check`; at least half of them complete.
void expect_samples(const std::string& schema, const std::function<bool(const Json&)>& check, int count = 60) {
  auto grammar = compile_schema(schema);
  ASSERT_TRUE(grammar);
  const std::vector<std::string> texts = sample_texts(grammar, count, std::hash<std::string>{}(schema));
  EXPECT_GE(static_cast<int>(texts.size()), count / 2) << schema;
  for (const std::string& text : texts) {
    const Json value = Json::parse(text, nullptr, false);
    ASSERT_FALSE(value.is_discarded()) << schema << " gave text that is not JSON: " << text;
    EXPECT_TRUE(check(value)) << schema << " gave " << text;
  }
}

TEST(JsonSchemaGrammar, Types) {
  auto grammar = compile_schema(R"({"type": "integer"})");
  EXPECT_TRUE(matches(grammar, "0"));
  EXPECT_TRUE(matches(grammar, "-17"));
  EXPECT_FALSE(matches(grammar, "1.5"));
  EXPECT_FALSE(matches(grammar, "017"));
  EXPECT_FALSE(matches(grammar, "\"1\""));
  grammar = compile_schema(R"({"type": ["string", "null"]})");
  EXPECT_TRUE(matches(grammar, "null"));
  EXPECT_TRUE(matches(grammar, R"("a\"b\u00e9")"));
  EXPECT_FALSE(matches(grammar, R"("\ud800")"));  // a lone surrogate escape
  EXPECT_FALSE(matches(grammar, "1"));
  grammar = compile_schema(R"({"type": "number"})");
  EXPECT_TRUE(matches(grammar, "-0.25e+3"));
  EXPECT_FALSE(matches(grammar, ".5"));
  grammar = compile_schema(R"({"type": "boolean"})");
  EXPECT_TRUE(matches(grammar, "false"));
  EXPECT_FALSE(matches(grammar, "False"));
  expect_samples(R"({"type": ["integer", "boolean", "null"]})",
                 [](const Json& v) { return v.is_number_integer() || v.is_boolean() || v.is_null(); });
  expect_samples(R"({})", [](const Json&) { return true; });
}

TEST(JsonSchemaGrammar, PropertiesRequiredAndAdditionalProperties) {
  const std::string schema = R"({"type": "object", "properties": {"name": {"type": "string"},
      "age": {"type": "integer"}, "tags": {"type": "array", "items": {"type": "string"}}},
      "required": ["name"], "additionalProperties": false})";
  auto grammar = compile_schema(schema);
  EXPECT_TRUE(matches(grammar, R"({"name": "a"})"));
  EXPECT_TRUE(matches(grammar, R"({"name":"a","age":3,"tags":["x"]})"));
  EXPECT_TRUE(matches(grammar, "{\n  \"name\": \"a\",\n  \"tags\": []\n}"));
  EXPECT_FALSE(matches(grammar, R"({"age": 3})"));                 // name is required
  EXPECT_FALSE(matches(grammar, R"({"name": "a", "other": 1})"));  // no extra properties
  EXPECT_FALSE(matches(grammar, R"({"name": "a",})"));
  expect_samples(schema, [](const Json& v) {
    if (!v.is_object() || !v.contains("name") || !v["name"].is_string()) return false;
    for (const auto& [key, value] : v.items()) {
      if (key != "name" && key != "age" && key != "tags") return false;
    }
    return !v.contains("age") || v["age"].is_number_integer();
  });
  // Extra properties with a schema of their own, never spelled like a declared one.
  const std::string open = R"({"type": "object", "properties": {"id": {"type": "integer"}},
      "additionalProperties": {"type": "boolean"}})";
  grammar = compile_schema(open);
  EXPECT_TRUE(matches(grammar, R"({"id": 1, "idx": true, "i": false})"));
  EXPECT_FALSE(matches(grammar, R"({"id": 1, "id": true})"));
  EXPECT_FALSE(matches(grammar, R"({"x": 1})"));
  expect_samples(open, [](const Json& v) {
    for (const auto& [key, value] : v.items()) {
      if (key == "id" ? !value.is_number_integer() : !value.is_boolean()) return false;
    }
    return v.is_object();
  });
  // No properties listed: any object.
  expect_samples(R"({"type": "object"})", [](const Json& v) { return v.is_object(); });
}

TEST(JsonSchemaGrammar, EnumAndConst) {
  auto grammar = compile_schema(R"({"enum": ["red", "green", 3, null, {"a": [1]}]})");
  EXPECT_TRUE(matches(grammar, R"("green")"));
  EXPECT_TRUE(matches(grammar, "3"));
  EXPECT_TRUE(matches(grammar, "null"));
  EXPECT_TRUE(matches(grammar, R"({"a":[1]})"));
  EXPECT_FALSE(matches(grammar, R"("blue")"));
  grammar = compile_schema(R"({"type": "string", "enum": ["x", 1]})");
  EXPECT_TRUE(matches(grammar, R"("x")"));
  EXPECT_FALSE(matches(grammar, "1"));  // not a string
  grammar = compile_schema(R"({"const": "fixed \"quote\""})");
  EXPECT_TRUE(matches(grammar, R"("fixed \"quote\"")"));
  EXPECT_FALSE(matches(grammar, R"("fixed")"));
}

TEST(JsonSchemaGrammar, ArraysItemsPrefixItemsAndBounds) {
  auto grammar = compile_schema(R"({"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 3})");
  EXPECT_TRUE(matches(grammar, "[1,2]"));
  EXPECT_TRUE(matches(grammar, "[1, 2, 3]"));
  EXPECT_FALSE(matches(grammar, "[1]"));
  EXPECT_FALSE(matches(grammar, "[1,2,3,4]"));
  EXPECT_FALSE(matches(grammar, "[1,\"a\"]"));
  expect_samples(R"({"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 3})",
                 [](const Json& v) { return v.is_array() && v.size() >= 2 && v.size() <= 3; });
  const std::string tuple =
      R"({"type": "array", "prefixItems": [{"type": "string"}, {"type": "boolean"}], "items": false})";
  grammar = compile_schema(tuple);
  EXPECT_TRUE(matches(grammar, R"(["a", true])"));
  EXPECT_TRUE(matches(grammar, R"(["a"])"));
  EXPECT_TRUE(matches(grammar, "[]"));
  EXPECT_FALSE(matches(grammar, R"(["a", true, 1])"));
  EXPECT_FALSE(matches(grammar, R"([true])"));
  grammar =
      compile_schema(R"({"type": "array", "prefixItems": [{"const": 1}], "items": {"type": "string"}, "minItems": 2})");
  EXPECT_TRUE(matches(grammar, R"([1, "a", "b"])"));
  EXPECT_FALSE(matches(grammar, "[1]"));
  EXPECT_FALSE(matches(grammar, R"(["a", "b"])"));
}

TEST(JsonSchemaGrammar, AnyOfOneOfAndReferences) {
  auto grammar = compile_schema(R"({"anyOf": [{"type": "integer"}, {"type": "string", "maxLength": 2}]})");
  EXPECT_TRUE(matches(grammar, "12"));
  EXPECT_TRUE(matches(grammar, R"("ab")"));
  EXPECT_FALSE(matches(grammar, R"("abc")"));
  grammar = compile_schema(R"({"oneOf": [{"type": "null"}, {"type": "boolean"}]})");
  EXPECT_TRUE(matches(grammar, "true"));
  EXPECT_FALSE(matches(grammar, "1"));
  // oneOf's "exactly one" holds when no value can match two alternatives: distinct types, distinct
  // listed values, or a required property whose listed values differ (through $refs too).
  grammar = compile_schema(R"({"oneOf": [{"enum": [1, "a"]}, {"const": 2}, {"type": "string", "enum": ["b"]}]})");
  EXPECT_TRUE(matches(grammar, R"("b")"));
  const std::string tagged = R"({"oneOf": [{"$ref": "#/$defs/sheep"}, {"type": "object",
      "properties": {"kind": {"enum": ["goat", "ram"]}}, "required": ["kind"]}],
      "$defs": {"sheep": {"type": "object", "properties": {"kind": {"const": "sheep"}, "n": {"type": "integer"}},
                          "required": ["n", "kind"], "additionalProperties": false}}})";
  grammar = compile_schema(tagged);
  EXPECT_TRUE(matches(grammar, R"({"kind": "ram"})"));
  EXPECT_TRUE(matches(grammar, R"({"kind": "sheep", "n": 3})"));
  // Where two alternatives may both match, exactly one cannot be enforced: refused, not loosened.
  for (const std::string& overlapping :
       {std::string(R"({"oneOf": [{"type": "integer"}, {"type": "number"}]})"),
        std::string(R"({"oneOf": [{"type": "string"}, {"type": ["null", "string"], "maxLength": 3}]})"),
        std::string(R"({"oneOf": [{"enum": [1, 2]}, {"const": 2}]})"),
        std::string(R"({"oneOf": [{"type": "object", "properties": {"k": {"const": "a"}}},
                                  {"type": "object", "properties": {"k": {"const": "b"}}}]})"),
        std::string(R"({"oneOf": [{"type": "object"}, {"anyOf": [{"type": "null"}, {"type": "object"}]}]})")}) {
    const std::string message = refusal(overlapping);
    EXPECT_NE(message.find("may both match one value"), std::string::npos) << overlapping << ": " << message;
    EXPECT_NE(message.find("at /oneOf"), std::string::npos) << message;
  }
  // A hostile oneOf costs bounded work: references doubling at every level, and alternatives by
  // the thousand.
  std::string doubling = R"({"oneOf": [{"$ref": "#/$defs/d0"}, {"type": "string"}], "$defs": {)";
  for (int i = 0; i < 40; ++i) {
    doubling += "\"d" + std::to_string(i) + "\": {\"anyOf\": [{\"$ref\": \"#/$defs/d" + std::to_string(i + 1) +
                "\"}, {\"$ref\": \"#/$defs/d" + std::to_string(i + 1) + "\"}]}, ";
  }
  doubling += R"("d40": {"type": "integer"}}})";
  EXPECT_NE(refusal(doubling).find("may both match one value"), std::string::npos);
  std::string many = R"({"oneOf": [)";
  for (int i = 0; i < 3000; ++i) {
    many +=
        (i > 0 ? ", " : "") + std::string(R"({"enum": [)") + std::to_string(i) + ", " + std::to_string(i + 5000) + "]}";
  }
  many += "]}";
  EXPECT_NE(refusal(many).find("too many to show"), std::string::npos);
  EXPECT_NE(refusal(R"({"properties": {"a": {"oneOf": [{"type": "string"}, {"type": "string"}, {"type": "null"}]}}})")
                .find("alternatives 0 and 1 may both match one value, so exactly one cannot be enforced: use anyOf"),
            std::string::npos);
  // A recursive tree through $defs.
  const std::string tree = R"({"$ref": "#/$defs/node", "$defs": {"node": {"type": "object",
      "properties": {"value": {"type": "integer"}, "children": {"type": "array", "items": {"$ref": "#/$defs/node"},
      "maxItems": 2}}, "required": ["value"], "additionalProperties": false}}})";
  grammar = compile_schema(tree);
  EXPECT_TRUE(matches(grammar, R"({"value": 1, "children": [{"value": 2}, {"value": 3, "children": []}]})"));
  EXPECT_FALSE(matches(grammar, R"({"value": 1, "children": [{"children": []}]})"));
  std::function<bool(const Json&)> is_node = [&](const Json& v) {
    if (!v.is_object() || !v.contains("value") || !v["value"].is_number_integer()) return false;
    if (!v.contains("children")) return true;
    if (!v["children"].is_array() || v["children"].size() > 2) return false;
    for (const Json& child : v["children"]) {
      if (!is_node(child)) return false;
    }
    return true;
  };
  expect_samples(tree, is_node);
  grammar = compile_schema(R"({"definitions": {"a~b/c": {"type": "null"}}, "$ref": "#/definitions/a~0b~1c"})");
  EXPECT_TRUE(matches(grammar, "null"));
  grammar = compile_schema(R"({"type": "array", "items": {"$ref": "#"}, "maxItems": 1})");
  EXPECT_TRUE(matches(grammar, "[[[]]]"));
}

TEST(JsonSchemaGrammar, StringLengthsPatternsAndFormats) {
  auto grammar = compile_schema(R"({"type": "string", "minLength": 2, "maxLength": 3})");
  EXPECT_TRUE(matches(grammar, R"("ab")"));
  EXPECT_TRUE(matches(grammar, R"("\n日本")"));  // 3 characters, one escaped
  EXPECT_FALSE(matches(grammar, R"("a")"));
  EXPECT_FALSE(matches(grammar, R"("abcd")"));
  grammar = compile_schema(R"({"type": "string", "pattern": "^[A-Z]{2}-\\d{3}(x|yz)?$"})");
  EXPECT_TRUE(matches(grammar, R"("AB-123")"));
  EXPECT_TRUE(matches(grammar, R"("AB-123yz")"));
  EXPECT_FALSE(matches(grammar, R"("AB-12")"));
  EXPECT_FALSE(matches(grammar, R"("ab-123")"));
  grammar = compile_schema(R"({"type": "string", "pattern": "a\"b"})");  // unanchored, with a quote
  EXPECT_TRUE(matches(grammar, R"("xxa\"byy")"));
  EXPECT_FALSE(matches(grammar, R"("ab")"));
  grammar = compile_schema(R"({"type": "string", "pattern": "^[^a]\\.$"})");
  EXPECT_TRUE(matches(grammar, R"js("\".")js"));
  EXPECT_TRUE(matches(grammar, R"("\\.")"));
  EXPECT_FALSE(matches(grammar, R"("a.")"));
  grammar = compile_schema(R"({"type": "string", "format": "date"})");
  EXPECT_TRUE(matches(grammar, R"("2024-02-29")"));
  EXPECT_TRUE(matches(grammar, R"("2023-12-31")"));
  EXPECT_FALSE(matches(grammar, R"("2023-02-29")"));  // not a leap year
  EXPECT_FALSE(matches(grammar, R"("1900-02-29")"));
  EXPECT_TRUE(matches(grammar, R"("2000-02-29")"));
  EXPECT_FALSE(matches(grammar, R"("2023-04-31")"));
  EXPECT_FALSE(matches(grammar, R"("2023-13-01")"));
  grammar = compile_schema(R"({"type": "string", "format": "date-time"})");
  EXPECT_TRUE(matches(grammar, R"("2023-01-02T03:04:05Z")"));
  EXPECT_TRUE(matches(grammar, R"("2023-01-02T23:59:59.123+05:30")"));
  EXPECT_FALSE(matches(grammar, R"("2023-01-02T24:00:00Z")"));
  EXPECT_FALSE(matches(grammar, R"("2023-01-02T03:04:05")"));
  grammar = compile_schema(R"({"type": "string", "format": "time"})");
  EXPECT_TRUE(matches(grammar, R"("12:30:00-08:00")"));
  grammar = compile_schema(R"({"type": "string", "format": "uuid"})");
  EXPECT_TRUE(matches(grammar, R"("123e4567-e89b-12d3-a456-426614174000")"));
  EXPECT_FALSE(matches(grammar, R"("123e4567e89b12d3a456426614174000")"));
}

TEST(JsonSchemaGrammar, IntegerBounds) {
  struct Case {
    const char* schema;
    int64_t low;
    int64_t high;
  };
  const Case cases[] = {{R"({"type": "integer", "minimum": 0, "maximum": 150})", 0, 150},
                        {R"({"type": "integer", "minimum": -37, "maximum": 1234})", -37, 1234},
                        {R"({"type": "integer", "exclusiveMinimum": 9, "exclusiveMaximum": 101})", 10, 100},
                        {R"({"type": "integer", "minimum": -1000, "maximum": -10})", -1000, -10},
                        {R"({"type": "integer", "minimum": 7, "maximum": 7})", 7, 7}};
  for (const Case& c : cases) {
    auto grammar = compile_schema(c.schema);
    ASSERT_TRUE(grammar);
    for (int64_t v = c.low - 1200; v <= c.high + 1200; ++v) {
      EXPECT_EQ(matches(grammar, std::to_string(v)), v >= c.low && v <= c.high) << c.schema << " " << v;
    }
    EXPECT_FALSE(matches(grammar, "-0"));
    EXPECT_FALSE(matches(grammar, "01"));
  }
  auto grammar = compile_schema(R"({"type": "integer", "minimum": 5})");
  EXPECT_TRUE(matches(grammar, "999999999999999"));
  EXPECT_FALSE(matches(grammar, "4"));
  grammar = compile_schema(R"({"type": "integer", "maximum": -5})");
  EXPECT_TRUE(matches(grammar, "-999999999999999"));
  EXPECT_FALSE(matches(grammar, "-4"));
}

TEST(JsonSchemaGrammar, RefusesWhatItDoesNotSupportNamingKeywordAndPointer) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"type": "object", "properties": {"a": {"not": {"type": "null"}}}})",
       "unsupported keyword 'not' at /properties/a"},
      {R"({"allOf": [{}]})", "unsupported keyword 'allOf' at /"},
      {R"({"type": "array", "uniqueItems": true})", "unsupported keyword 'uniqueItems' at /"},
      {R"({"type": "object", "patternProperties": {}})", "unsupported keyword 'patternProperties' at /"},
      {R"({"type": "integer", "multipleOf": 2})", "unsupported keyword 'multipleOf' at /"},
      {R"({"type": "number", "minimum": 0})", "'minimum' on a number is not supported"},
      {R"({"type": "string", "format": "email"})",
       "format \"email\" is not supported (date, time, date-time, uuid) at /format"},
      {R"({"type": "string", "pattern": "(a)\\1"})", "backreferences"},
      {R"js({"type": "string", "pattern": "a(?=b)"})js", "lookaround"},
      {R"({"type": "string", "pattern": "\\bword"})", "word boundaries"},
      {R"({"type": "string", "pattern": "a^b"})", "'^' is supported only at the start"},
      {R"({"$ref": "http://example.com/schema"})", "only local references"},
      {R"({"$ref": "#/$defs/missing"})", "'#/$defs/missing' does not resolve at /$ref"},
      {R"({"$ref": "#/$defs/a", "type": "object", "$defs": {"a": {}}})",
       "'$ref' together with 'type' is not supported"},
      {R"({"anyOf": [{}], "type": "object"})", "'anyOf' together with 'type'"},
      {R"({"enum": ["a"], "maxLength": 1})", "'enum' together with 'maxLength'"},
      {R"({"type": "strin"})", "unknown type \"strin\""},
      {R"({"type": "integer", "minimum": 5, "maximum": 4})", "no integer lies between the bounds"},
      {R"({"type": "string", "minLength": 3, "maxLength": 2})", "'maxLength' is below 'minLength'"},
      {R"({"type": "array", "minItems": 3, "maxItems": 1})", "no array length"},
      {R"({"type": "array", "items": [{}]})", "use 'prefixItems' at /items"},
      {R"({"type": "object", "required": ["x"], "additionalProperties": false})", "required property 'x'"},
      {R"({"type": "string", "enum": [1, 2]})", "no value of 'enum' has the schema's type"},
      {R"(false)", "the schema 'false' allows no value"},
      {R"({"type": "string", "maxLength": 100000})", "values above 10000 are not supported at /maxLength"},
      {R"({"properties": {"a": 1}})", "a schema must be an object or a boolean"},
      {R"({"type": "string", "format": "date", "maxLength": 3})", "'format' together with"},
      {R"(not json)", "not valid JSON"},
  };
  for (const auto& [schema, expected] : cases) {
    const std::string message = refusal(schema);
    EXPECT_NE(message.find(expected), std::string::npos) << schema << " -> " << message;
  }
  std::string deep;
  for (int i = 0; i < 200; ++i) deep += R"({"items": )";
  deep += "{}";
  for (int i = 0; i < 200; ++i) deep += "}";
  EXPECT_NE(refusal(deep).find("nests deeper"), std::string::npos);
}

TEST(JsonSchemaGrammar, AnnotationsAreIgnored) {
  auto grammar = compile_schema(R"({"title": "T", "description": "d", "$schema": "x", "default": 1,
      "examples": [1], "type": "integer", "$comment": "c", "deprecated": false})");
  EXPECT_TRUE(matches(grammar, "5"));
}

TEST(JsonSchemaGrammar, AnyJsonObject) {
  Result<std::shared_ptr<const CompiledGrammar>> grammar = compile_gbnf(any_json_object_gbnf(), byte_vocabulary());
  ASSERT_TRUE(grammar.ok()) << grammar.status().to_string();
  EXPECT_TRUE(matches(*grammar, R"({"a": [1, {"b": null}], "c": "d"})"));
  EXPECT_FALSE(matches(*grammar, "[1]"));
  EXPECT_FALSE(matches(*grammar, R"({"a": 1} )"));  // ends at its closing brace
  const std::vector<std::string> texts = sample_texts(*grammar, 40, 7);
  EXPECT_GE(texts.size(), 20u);
  for (const std::string& text : texts) {
    const Json value = Json::parse(text, nullptr, false);
    EXPECT_TRUE(!value.is_discarded() && value.is_object()) << text;
  }
}

}  // namespace
}  // namespace staticlm
