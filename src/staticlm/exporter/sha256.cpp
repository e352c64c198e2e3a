// SPDX-License-Identifier: Apache-2.0
#include "staticlm/exporter/sha256.h"

#include <memory>

#include <openssl/evp.h>

namespace staticlm {

Result<std::string> sha256_hex(std::span<const std::span<const uint8_t>> pieces) {
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> context(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  if (!context || EVP_DigestInit_ex(context.get(), EVP_sha256(), nullptr) != 1) {
    return internal_error("cannot initialise SHA-256");
  }
  for (std::span<const uint8_t> piece : pieces) {
    if (!piece.empty() && EVP_DigestUpdate(context.get(), piece.data(), piece.size()) != 1) {
      return internal_error("SHA-256 update failed");
    }
  }
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (EVP_DigestFinal_ex(context.get(), digest, &length) != 1) {
    return internal_error("SHA-256 final failed");
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < length; ++i) {
    out += kHex[digest[i] >> 4];
    out += kHex[digest[i] & 0xf];
  }
  return out;
}

}  // namespace staticlm
