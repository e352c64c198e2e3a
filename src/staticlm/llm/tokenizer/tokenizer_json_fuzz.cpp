// SPDX-License-Identifier: Apache-2.0
// libFuzzer: a tokenizer.json as a checkpoint could ship it. Loading must refuse what is
// malformed with a Status; a tokenizer it accepts must encode and decode text without crashing.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "staticlm/llm/tokenizer/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view json(reinterpret_cast<const char*>(data), size);
  auto tokenizer = staticlm::load_tokenizer_json(json, std::nullopt);
  if (!tokenizer.ok()) {
    return 0;
  }
  auto ids = (*tokenizer)->encode("Hello world! <s> 123 \xc3\xa9\xe4\xb8\xad \n\t  end");
  if (ids.ok()) {
    (void)(*tokenizer)->decode(*ids, /*skip_special=*/false);
  }
  return 0;
}
