// SPDX-License-Identifier: Apache-2.0
#include "staticlm/core/mapped_file.h"

#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

namespace staticlm {
namespace {

using ::testing::IsSubstring;

// A fresh directory per test, removed afterwards.
class MappedFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (std::filesystem::temp_directory_path() / "staticlm_mapped_file_XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    std::error_code error;
    std::filesystem::permissions(dir_, std::filesystem::perms::owner_all, error);
    std::filesystem::remove_all(dir_, error);
  }

  std::string write_file(const std::string& name, const std::vector<uint8_t>& bytes) {
    const std::string path = (dir_ / name).string();
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    EXPECT_TRUE(out.good()) << path;
    return path;
  }

  std::filesystem::path dir_;
};

std::vector<uint8_t> pattern_bytes(size_t count) {
  std::vector<uint8_t> bytes(count);
  for (size_t i = 0; i < count; ++i) {
    bytes[i] = static_cast<uint8_t>((i * 131 + 7) % 251);
  }
  return bytes;
}

TEST_F(MappedFileTest, MapsKnownContent) {
  // Larger than a page, and not a multiple of one.
  const std::vector<uint8_t> expected = pattern_bytes(10000);
  const std::string path = write_file("data.bin", expected);
  Result<MappedFile> file = MappedFile::open(path);
  ASSERT_TRUE(file.ok()) << file.status().to_string();
  EXPECT_EQ(file->size(), expected.size());
  EXPECT_EQ(file->path(), path);
  ASSERT_NE(file->data(), nullptr);
  EXPECT_EQ(file->bytes().data(), file->data());
  ASSERT_EQ(file->bytes().size(), expected.size());
  EXPECT_EQ(std::vector<uint8_t>(file->bytes().begin(), file->bytes().end()), expected);
}

TEST_F(MappedFileTest, MissingFileIsNotFoundWithPath) {
  const std::string path = (dir_ / "does_not_exist.bin").string();
  Result<MappedFile> file = MappedFile::open(path);
  ASSERT_FALSE(file.ok());
  EXPECT_EQ(file.status().code(), StatusCode::kNotFound);
  EXPECT_PRED_FORMAT2(IsSubstring, "'" + path + "'", file.status().message());
  EXPECT_PRED_FORMAT2(IsSubstring, "no such file", file.status().message());
}

TEST_F(MappedFileTest, DirectoryIsInvalidArgument) {
  Result<MappedFile> file = MappedFile::open(dir_.string());
  ASSERT_FALSE(file.ok());
  EXPECT_EQ(file.status().code(), StatusCode::kInvalidArgument);
  EXPECT_PRED_FORMAT2(IsSubstring, "'" + dir_.string() + "' is not a regular file", file.status().message());
}

TEST_F(MappedFileTest, DeviceIsInvalidArgument) {
  Result<MappedFile> file = MappedFile::open("/dev/null");
  ASSERT_FALSE(file.ok());
  EXPECT_EQ(file.status().code(), StatusCode::kInvalidArgument);
  EXPECT_PRED_FORMAT2(IsSubstring, "'/dev/null' is not a regular file", file.status().message());
}

TEST_F(MappedFileTest, UnreadableFileIsUnavailable) {
  if (geteuid() == 0) {
    GTEST_SKIP() << "root reads files regardless of permissions";
  }
  const std::string path = write_file("secret.bin", pattern_bytes(16));
  std::filesystem::permissions(path, std::filesystem::perms::none);
  Result<MappedFile> file = MappedFile::open(path);
  ASSERT_FALSE(file.ok());
  EXPECT_EQ(file.status().code(), StatusCode::kUnavailable);
  EXPECT_PRED_FORMAT2(IsSubstring, "'" + path + "': cannot open", file.status().message());
  Result<std::string> text = read_text_file(path);
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.status().code(), StatusCode::kUnavailable);
}

TEST_F(MappedFileTest, EmptyFileMapsToEmptyView) {
  const std::string path = write_file("empty.bin", {});
  Result<MappedFile> file = MappedFile::open(path);
  ASSERT_TRUE(file.ok()) << file.status().to_string();
  EXPECT_EQ(file->size(), 0u);
  EXPECT_TRUE(file->bytes().empty());
  EXPECT_EQ(file->path(), path);
}

TEST_F(MappedFileTest, DefaultConstructedIsEmpty) {
  MappedFile file;
  EXPECT_EQ(file.size(), 0u);
  EXPECT_EQ(file.data(), nullptr);
  EXPECT_TRUE(file.bytes().empty());
  EXPECT_EQ(file.path(), "");
}

TEST_F(MappedFileTest, MoveConstructionTransfersMapping) {
  const std::vector<uint8_t> expected = pattern_bytes(300);
  const std::string path = write_file("move.bin", expected);
  Result<MappedFile> opened = MappedFile::open(path);
  ASSERT_TRUE(opened.ok());
  MappedFile original = std::move(opened).value();
  const uint8_t* mapping = original.data();

  MappedFile moved(std::move(original));
  EXPECT_EQ(moved.data(), mapping);
  EXPECT_EQ(moved.size(), expected.size());
  EXPECT_EQ(moved.path(), path);
  EXPECT_EQ(std::vector<uint8_t>(moved.bytes().begin(), moved.bytes().end()), expected);
  // NOLINTBEGIN(bugprone-use-after-move): the moved-from state is part of the contract.
  EXPECT_EQ(original.data(), nullptr);
  EXPECT_EQ(original.size(), 0u);
  // NOLINTEND(bugprone-use-after-move)
}

TEST_F(MappedFileTest, MoveAssignmentReleasesOldMapping) {
  const std::vector<uint8_t> first_bytes = pattern_bytes(100);
  const std::vector<uint8_t> second_bytes = pattern_bytes(5000);
  Result<MappedFile> first = MappedFile::open(write_file("first.bin", first_bytes));
  Result<MappedFile> second = MappedFile::open(write_file("second.bin", second_bytes));
  ASSERT_TRUE(first.ok());
  ASSERT_TRUE(second.ok());

  MappedFile target = std::move(first).value();
  MappedFile source = std::move(second).value();
  target = std::move(source);
  EXPECT_EQ(target.size(), second_bytes.size());
  EXPECT_EQ(std::vector<uint8_t>(target.bytes().begin(), target.bytes().end()), second_bytes);
  EXPECT_EQ(target.path(), (dir_ / "second.bin").string());
  // NOLINTNEXTLINE(bugprone-use-after-move)
  EXPECT_EQ(source.data(), nullptr);

  // Self-move leaves the mapping intact.
  MappedFile& alias = target;
  target = std::move(alias);
  EXPECT_EQ(target.size(), second_bytes.size());
  EXPECT_EQ(std::vector<uint8_t>(target.bytes().begin(), target.bytes().end()), second_bytes);
}

TEST_F(MappedFileTest, MappingOutlivesRemovedFile) {
  const std::vector<uint8_t> expected = pattern_bytes(4096);
  const std::string path = write_file("gone.bin", expected);
  Result<MappedFile> file = MappedFile::open(path);
  ASSERT_TRUE(file.ok());
  std::filesystem::remove(path);
  EXPECT_EQ(std::vector<uint8_t>(file->bytes().begin(), file->bytes().end()), expected);
}

TEST_F(MappedFileTest, ReadTextFile) {
  const std::string content = "{\n  \"hidden_size\": 64\n}\n";
  const std::string path = write_file("config.json", std::vector<uint8_t>(content.begin(), content.end()));
  Result<std::string> text = read_text_file(path);
  ASSERT_TRUE(text.ok()) << text.status().to_string();
  EXPECT_EQ(*text, content);
}

TEST_F(MappedFileTest, ReadTextFileKeepsBinaryBytes) {
  const std::vector<uint8_t> bytes = {'a', 0, '\r', '\n', 0xff, 'z'};
  Result<std::string> text = read_text_file(write_file("binary.txt", bytes));
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(std::vector<uint8_t>(text->begin(), text->end()), bytes);
}

TEST_F(MappedFileTest, ReadTextFileEmpty) {
  Result<std::string> text = read_text_file(write_file("empty.txt", {}));
  ASSERT_TRUE(text.ok()) << text.status().to_string();
  EXPECT_EQ(*text, "");
}

TEST_F(MappedFileTest, ReadTextFileMissing) {
  const std::string path = (dir_ / "missing.json").string();
  Result<std::string> text = read_text_file(path);
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.status().code(), StatusCode::kNotFound);
  EXPECT_PRED_FORMAT2(IsSubstring, "'" + path + "': no such file", text.status().message());
}

TEST_F(MappedFileTest, ReadTextFileDirectoryRefused) {
  Result<std::string> text = read_text_file(dir_.string());
  ASSERT_FALSE(text.ok()) << "read a directory as '" << *text << "'";
  EXPECT_EQ(text.status().code(), StatusCode::kInvalidArgument);
  EXPECT_PRED_FORMAT2(IsSubstring, "'" + dir_.string() + "' is a directory, not a file", text.status().message());
}

TEST_F(MappedFileTest, ReadTextFileOverTheLimitRefused) {
  const std::string path = write_file("big.txt", std::vector<uint8_t>(100, 'x'));
  Result<std::string> text = read_text_file(path, 99);
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.status().code(), StatusCode::kInvalidArgument);
  EXPECT_PRED_FORMAT2(IsSubstring, "'" + path + "' is 100 bytes, more than the 99", text.status().message());
  EXPECT_TRUE(read_text_file(path, 100).ok());
}

TEST_F(MappedFileTest, ReadTextFileFromAPipeIsBoundedToo) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  ASSERT_EQ(write(fds[1], "0123456789", 10), 10);
  close(fds[1]);
  const std::string path = "/proc/self/fd/" + std::to_string(fds[0]);
  Result<std::string> text = read_text_file(path, 4);
  close(fds[0]);
  ASSERT_FALSE(text.ok());
  EXPECT_PRED_FORMAT2(IsSubstring, "holds more than the 4 bytes", text.status().message());
}

TEST_F(MappedFileTest, ReadTextFileReadErrorRefused) {
  // A file whose read fails, for root too: offset 0 of a process's memory is never mapped.
  Result<std::string> text = read_text_file("/proc/self/mem");
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.status().code(), StatusCode::kUnavailable);
  EXPECT_PRED_FORMAT2(IsSubstring, "'/proc/self/mem': read failed", text.status().message());
}

}  // namespace
}  // namespace staticlm
