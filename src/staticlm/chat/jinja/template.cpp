// SPDX-License-Identifier: Apache-2.0
#include "staticlm/chat/jinja/template.h"

#include "staticlm/chat/jinja/builtins.h"
#include "staticlm/chat/jinja/parser.h"

namespace staticlm::jinja {

Result<Template> Template::parse(std::string_view source, const LexerOptions& options) {
  STATICLM_ASSIGN_OR_RETURN(std::vector<Token> tokens, tokenize(source, options));
  STATICLM_ASSIGN_OR_RETURN(Body body, jinja::parse(tokens));
  return Template(std::make_shared<const Body>(std::move(body)));
}

Result<std::string> Template::render(const std::vector<std::pair<std::string, Value>>& variables,
                                     const RenderLimits& limits) const {
  auto globals = std::make_shared<Scope>(nullptr);
  for (auto& [name, value] : builtin_globals()) {
    globals->assign(name, std::move(value));
  }
  auto root = std::make_shared<Scope>(globals);
  Interpreter interpreter(limits, root);
  for (const auto& [name, value] : variables) {
    STATICLM_RETURN_IF_ERROR(interpreter.assign(name, value).with_context(str_cat("variable '", name, "'")));
  }
  STATICLM_ASSIGN_OR_RETURN(Flow flow, execute_body(*body_, interpreter));
  (void)flow;
  return interpreter.take_output();
}

}  // namespace staticlm::jinja
