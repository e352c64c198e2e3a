// SPDX-License-Identifier: Apache-2.0
#include "staticlm/core/byte_source.h"

#include <cstring>
#include <utility>

namespace staticlm {
namespace {

class BorrowedSource : public ByteSource {
 public:
  explicit BorrowedSource(std::span<const uint8_t> bytes) : bytes_(bytes) {}
  uint64_t size_bytes() const override { return bytes_.size(); }
  Status read(std::span<uint8_t> out) const override {
    if (out.size() != bytes_.size()) {
      return internal_error("byte source holds ", bytes_.size(), " bytes, asked for ", out.size());
    }
    if (!bytes_.empty()) {
      std::memcpy(out.data(), bytes_.data(), bytes_.size());
    }
    return ok_status();
  }

 private:
  std::span<const uint8_t> bytes_;
};

// Owns its bytes and serves them as a borrowed view of itself.
class OwnedSource final : public BorrowedSource {
 public:
  explicit OwnedSource(std::vector<uint8_t> bytes)
      : OwnedSource(std::make_unique<std::vector<uint8_t>>(std::move(bytes))) {}

 private:
  explicit OwnedSource(std::unique_ptr<std::vector<uint8_t>> bytes)
      : BorrowedSource(std::span<const uint8_t>(*bytes)), bytes_(std::move(bytes)) {}
  std::unique_ptr<std::vector<uint8_t>> bytes_;
};

}  // namespace

std::shared_ptr<ByteSource> make_owned_source(std::vector<uint8_t> bytes) {
  return std::make_shared<OwnedSource>(std::move(bytes));
}

std::shared_ptr<ByteSource> make_borrowed_source(std::span<const uint8_t> bytes) {
  return std::make_shared<BorrowedSource>(bytes);
}

}  // namespace staticlm
