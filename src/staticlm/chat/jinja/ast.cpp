// SPDX-License-Identifier: Apache-2.0
#include "staticlm/chat/jinja/ast.h"

namespace staticlm::jinja {

Status Location::error(std::string_view message) const {
  return invalid_argument("line ", line, ", column ", column, ": ", message);
}

Status Location::locate(const Status& status) const {
  if (status.ok()) {
    return status;
  }
  return Status(status.code(), str_cat("line ", line, ", column ", column, ": ", status.message()));
}

Result<Flow> execute_body(const Body& body, Interpreter& interpreter) {
  for (const StmtPtr& statement : body) {
    STATICLM_ASSIGN_OR_RETURN(Flow flow, statement->execute(interpreter));
    if (flow != Flow::kNormal) {
      return flow;
    }
  }
  return Flow::kNormal;
}

}  // namespace staticlm::jinja
