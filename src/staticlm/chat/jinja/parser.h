// SPDX-License-Identifier: Apache-2.0
// Builds the statement tree from tokens, following Jinja's grammar and operator precedence.
#pragma once

#include <span>

#include "staticlm/chat/jinja/ast.h"
#include "staticlm/chat/jinja/lexer.h"

namespace staticlm::jinja {

// Fails (InvalidArgument, with line and column) on a syntax error, an unknown tag, filter or
// test, a block closed by the wrong end tag or never closed, break / continue outside a loop, a
// tag Hugging Face chat templates cannot use (include, import, extends, block), or nesting deeper
// than the parser allows.
Result<Body> parse(std::span<const Token> tokens);

}  // namespace staticlm::jinja
