// SPDX-License-Identifier: Apache-2.0
// A parsed Jinja template, rendered with Hugging Face's chat-template semantics. Parse once,
// render many times (renders share nothing; a Template can be rendered from several threads).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "staticlm/chat/jinja/interpreter.h"
#include "staticlm/chat/jinja/lexer.h"
#include "staticlm/chat/jinja/value.h"

namespace staticlm::jinja {

class Template {
 public:
  // Fails (InvalidArgument, "line L, column C: ...") on a syntax error or anything the parser
  // refuses (parser.h).
  static Result<Template> parse(std::string_view source, const LexerOptions& options = {});

  // Renders with `variables` bound over the globals (range, namespace, dict, raise_exception,
  // strftime_now). Fails (InvalidArgument, with line and column) for an error the template hits
  // or raises, and ResourceExhausted when it passes `limits`.
  Result<std::string> render(const std::vector<std::pair<std::string, Value>>& variables,
                             const RenderLimits& limits = {}) const;

 private:
  explicit Template(std::shared_ptr<const Body> body) : body_(std::move(body)) {}
  std::shared_ptr<const Body> body_;
};

}  // namespace staticlm::jinja
