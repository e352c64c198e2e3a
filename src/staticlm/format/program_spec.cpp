#include "staticlm/format/program_spec.h"

namespace staticlm {

std::string_view value_storage_name(ValueStorage storage) {
  switch (storage) {
    case ValueStorage::kArena: return "arena";
    case ValueStorage::kInput: return "input";
    case ValueStorage::kOutput: return "output";
    case ValueStorage::kConstant: return "constant";
    case ValueStorage::kNamedData: return "named data";
  }
  return "unknown";
}

}  // namespace staticlm
