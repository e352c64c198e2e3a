// SPDX-License-Identifier: Apache-2.0
// What the parity suite cannot show: staticlm's own messages (line and column), the limits that
// keep an untrusted template bounded, and robustness on malformed text.
#include <random>

#include <gtest/gtest.h>

#include "staticlm/chat/jinja/template.h"

namespace staticlm::jinja {
namespace {

Result<std::string> render(std::string_view source, const std::vector<std::pair<std::string, Value>>& variables = {},
                           const RenderLimits& limits = {}) {
  STATICLM_ASSIGN_OR_RETURN(Template parsed, Template::parse(source));
  return parsed.render(variables, limits);
}

std::string error_of(std::string_view source, const RenderLimits& limits = {}) {
  auto result = render(source, {}, limits);
  return result.ok() ? "rendered: " + *result : result.status().to_string();
}

TEST(JinjaTest, SyntaxErrorsNameLineAndColumn) {
  EXPECT_EQ(error_of("line one\n{% if x %}\n{% endfor %}"),
            "InvalidArgument: line 3, column 4: unexpected 'endfor' (expected 'endif')");
  EXPECT_EQ(error_of("ab\n  {% for x in y %}"),
            "InvalidArgument: line 2, column 6: '{% for %}' is never closed (expected '{% endfor %}')");
  EXPECT_EQ(error_of("{{ x | shout }}"), "InvalidArgument: line 1, column 8: no filter named 'shout'");
  EXPECT_EQ(error_of("é{{ 'open }}"), "InvalidArgument: line 1, column 5: the string opened here is never closed");
  EXPECT_EQ(error_of("{% include 'other.jinja' %}"),
            "InvalidArgument: line 1, column 4: '{% include %}' is not supported in chat templates");
  EXPECT_EQ(error_of("{{ 1 +* 2 }}"), "InvalidArgument: line 1, column 7: expected an expression, found '*'");
  EXPECT_EQ(error_of("{# never closed"),
            "InvalidArgument: line 1, column 1: the comment opened here is never closed with '#}'");
}

TEST(JinjaTest, RuntimeErrorsNameWhereTheyHappen) {
  EXPECT_EQ(error_of("ok\n  {{ missing.attribute }}"), "InvalidArgument: line 2, column 13: 'missing' is undefined");
  EXPECT_EQ(error_of("{{ 'a' + 1 }}"),
            "InvalidArgument: line 1, column 8: can only concatenate str (not \"int\") to str");
  EXPECT_EQ(error_of("\n{{ raise_exception('roles must alternate') }}"),
            "InvalidArgument: line 2, column 19: raised by the template: roles must alternate");
  EXPECT_EQ(error_of("{{ 9223372036854775807 + 1 }}"),
            "InvalidArgument: line 1, column 24: integer overflow in + (staticlm's template integers are 64-bit)");
  // A failure inside a macro names the line in the macro, not the call.
  EXPECT_EQ(error_of("{% macro m() %}\n{{ 1 // 0 }}{% endmacro %}\n{{ m() }}"),
            "InvalidArgument: line 2, column 6: integer division or modulo by zero");
}

TEST(JinjaTest, LimitsStopRunawayTemplates) {
  RenderLimits limits;
  limits.max_output_bytes = 1000;
  EXPECT_EQ(error_of("{% for i in range(2000) %}x{% endfor %}", limits),
            "ResourceExhausted: line 1, column 27: the template's output passes the limit of 1000 bytes");
  EXPECT_EQ(error_of("{{ 'x' * 5000 }}", limits).rfind("ResourceExhausted: line 1, column 8: the template builds", 0),
            0u);
  EXPECT_EQ(error_of("{% set ns = namespace(s='x') %}{% for i in range(20) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}",
                     limits)
                .rfind("ResourceExhausted", 0),
            0u);
  limits = {};
  limits.max_loop_iterations = 500;
  EXPECT_EQ(error_of("{% for i in range(100) %}{% for j in range(100) %}{% endfor %}{% endfor %}", limits),
            "ResourceExhausted: line 1, column 29: the template runs more than 500 loop iterations");
  limits = {};
  EXPECT_EQ(error_of("{% macro r(n) %}{{ r(n + 1) }}{% endmacro %}{{ r(0) }}", limits),
            "ResourceExhausted: line 1, column 4: macro calls nest deeper than 32 levels");
  EXPECT_EQ(error_of("{{ range(100001) | length }}").rfind("InvalidArgument: line 1, column 9: Range too big.", 0), 0u);

  // Every way of growing a string is held to the limit before the string is built: methods,
  // filters, joins, printf widths and JSON of a value that repeats a long string.
  limits = {};
  limits.max_output_bytes = 1000;
  for (const char* growing : {
           "{% set ns = namespace(s='xy') %}{% for i in range(20) %}{% set ns.s = ns.s.replace('x', ns.s) %}"
           "{% endfor %}",
           "{{ ('x' * 600).replace('', 'ab') }}",
           "{{ ('x' * 600) | replace('', 'ab') }}",
           "{{ ('x' * 900).join(['a', 'b', 'c']) }}",
           "{{ '{}{}'.format('x' * 600, 'y' * 600) }}",
           "{{ '%2000d' % 1 }}",
           "{{ '%.5000f' % 1.5 }}",
           "{{ (['x' * 600] * 5) | tojson }}",
           "{{ [1, [2]] | tojson(indent='x' * 999) }}",
       }) {
    const std::string error = error_of(growing, limits);
    EXPECT_EQ(error.rfind("ResourceExhausted", 0), 0u) << growing << " -> " << error;
  }
}

TEST(JinjaTest, DeepNestingIsRefusedNotRecursedInto) {
  EXPECT_EQ(error_of("{{ " + std::string(10000, '(') + "1" + std::string(10000, ')') + " }}")
                .rfind("InvalidArgument: line 1, column", 0),
            0u);
  EXPECT_EQ(error_of("{{ " + std::string(10000, '[') + std::string(10000, ']') + " }}").rfind("InvalidArgument", 0),
            0u);
  std::string statements;
  for (int i = 0; i < 5000; ++i) {
    statements += "{% if true %}";
  }
  EXPECT_NE(error_of(statements).find("nests deeper than 128 levels"), std::string::npos);
  // Lists nested one level per statement: bounded where a value is bound.
  std::string sets = "{% set x = [] %}";
  for (int i = 0; i < 200; ++i) {
    sets += "{% set x = [x] %}";
  }
  EXPECT_NE(error_of(sets).find("nested deeper than 128 levels"), std::string::npos);
  EXPECT_NE(error_of("{% set ns = namespace() %}{% for i in range(1000) %}{% set ns.x = [ns.x] %}{% endfor %}")
                .find("nested deeper than 128 levels"),
            std::string::npos);
}

TEST(JinjaTest, ANamespaceCannotHoldItself) {
  EXPECT_EQ(
      error_of("{% set ns = namespace() %}{% set ns.self = [ns] %}"),
      "InvalidArgument: line 1, column 30: cannot store a namespace or loop object in namespace attribute 'self'");
}

TEST(JinjaTest, AMacroCarriedOutOfItsLoopCannotBeCalled) {
  EXPECT_EQ(error_of("{% set ns = namespace() %}{% for i in range(1) %}{% macro m() %}x{% endmacro %}"
                     "{% set ns.m = m %}{% endfor %}{{ ns.m() }}"),
            "InvalidArgument: line 1, column 53: macro 'm' is called after the loop iteration that defined it");
}

TEST(JinjaTest, StrftimeNowFormatsTheLocalTime) {
  auto year = render("{{ strftime_now('%Y') }}");
  ASSERT_TRUE(year.ok()) << year.status().to_string();
  ASSERT_EQ(year->size(), 4u);
  EXPECT_GE(std::stoi(*year), 2024);
}

TEST(JinjaTest, ATemplateRendersManyTimesWithDifferentVariables) {
  auto parsed = Template::parse("{% for m in messages %}{{ m }};{% endfor %}");
  ASSERT_TRUE(parsed.ok());
  for (int i = 0; i < 3; ++i) {
    auto text = parsed->render({{"messages", Value::list({Value(i), Value("x")})}});
    ASSERT_TRUE(text.ok());
    EXPECT_EQ(*text, std::to_string(i) + ";x;");
  }
}

// Random bytes and random splices of a real template never crash the lexer, parser or renderer
// (the ASan build runs this too); they either render or fail with a status.
TEST(JinjaTest, MalformedTextFailsCleanly) {
  const std::string real =
      "{%- set ns = namespace(x=0) -%}{% for m in messages if m.role != 'x' %}{{ '<|' ~ m.role ~ '|>' + "
      "m.content | trim }}{% if loop.last and add_generation_prompt %}{{ '<|assistant|>' }}{% endif %}"
      "{% set ns.x = ns.x + 1 %}{% endfor %}{{ ns.x | tojson }}{{ messages[1:] | map(attribute='role') | join(',') }}";
  const std::vector<std::pair<std::string, Value>> variables = {
      {"messages", Value::list({Value::dict({{"role", Value("user")}, {"content", Value(" hi ")}}),
                                Value::dict({{"role", Value("assistant")}, {"content", Value("yo")}})})},
      {"add_generation_prompt", Value(true)}};
  auto baseline = render(real, variables);
  ASSERT_TRUE(baseline.ok()) << baseline.status().to_string();
  EXPECT_EQ(*baseline, "<|user|>hi<|assistant|>yo<|assistant|>2assistant");
  std::mt19937 random(1234);
  for (int trial = 0; trial < 3000; ++trial) {
    std::string text = real;
    const int edits = 1 + static_cast<int>(random() % 4);
    for (int e = 0; e < edits; ++e) {
      const size_t at = random() % (text.size() + 1);
      switch (random() % 3) {
        case 0: text.insert(at, 1, "{}%#-+()[]'\"|.~,:=! \n\\x\xC3\xFF"[random() % 24]); break;
        case 1:
          if (at < text.size()) {
            text.erase(at, 1 + random() % 8);
          }
          break;
        default: text.insert(at, real.substr(random() % real.size(), random() % 24));
      }
    }
    auto result = render(text, variables);
    if (!result.ok()) {
      EXPECT_FALSE(result.status().message().empty());
    }
  }
}

}  // namespace
}  // namespace staticlm::jinja
