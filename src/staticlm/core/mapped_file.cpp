// SPDX-License-Identifier: Apache-2.0
#include "staticlm/core/mapped_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include <sys/mman.h>
#include <sys/stat.h>

namespace staticlm {

MappedFile::~MappedFile() {
  if (data_ != nullptr && size_ > 0) {
    munmap(const_cast<uint8_t*>(data_), size_);
  }
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)), path_(std::move(other.path_)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    if (data_ != nullptr && size_ > 0) {
      munmap(const_cast<uint8_t*>(data_), size_);
    }
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    path_ = std::move(other.path_);
  }
  return *this;
}

Result<MappedFile> MappedFile::open(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int err = errno;
    if (err == ENOENT) {
      return not_found("'", path, "': no such file");
    }
    return unavailable("'", path, "': cannot open: ", std::strerror(err));
  }
  struct stat info {};
  if (fstat(fd, &info) != 0) {
    int err = errno;
    ::close(fd);
    return unavailable("'", path, "': cannot stat: ", std::strerror(err));
  }
  if (!S_ISREG(info.st_mode)) {
    ::close(fd);
    return invalid_argument("'", path, "' is not a regular file");
  }
  MappedFile file;
  file.path_ = path;
  file.size_ = static_cast<uint64_t>(info.st_size);
  if (file.size_ > 0) {
    void* mapping = mmap(nullptr, file.size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (mapping == MAP_FAILED) {
      int err = errno;
      ::close(fd);
      file.size_ = 0;
      return unavailable("'", path, "': cannot map: ", std::strerror(err));
    }
    file.data_ = static_cast<const uint8_t*>(mapping);
    // Decode streams every weight byte once per token, faster through 2 MiB pages (fewer page
    // walks, prefetch streams that do not stop at 4 KiB). Asked for, the page cache reads the
    // file into 2 MiB folios where the kernel and file system allow, so more of a cold program
    // maps as huge pages (`staticlm bench`'s decode on a cold program). Advice only: a refusal
    // changes nothing.
    madvise(mapping, file.size_, MADV_HUGEPAGE);
  }
  ::close(fd);
  return file;
}

void release_mapped_pages(std::span<const uint8_t> bytes) {
  const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const auto begin = reinterpret_cast<uintptr_t>(bytes.data());
  const uintptr_t first = (begin + page - 1) / page * page;
  const uintptr_t last = (begin + bytes.size()) / page * page;
  if (bytes.empty() || last <= first) {
    return;
  }
  // Advice only: a failure leaves the pages resident, which is harmless.
  madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
}

Result<std::string> read_text_file(const std::string& path, uint64_t max_bytes) {
  // Checked before reading: a directory opens fine, and then reading it fails (an ifstream
  // throws from inside the library).
  struct stat info {};
  if (stat(path.c_str(), &info) != 0) {
    const int err = errno;
    if (err == ENOENT || err == ENOTDIR) {
      return not_found("'", path, "': no such file");
    }
    return unavailable("'", path, "': ", std::strerror(err));
  }
  if (S_ISDIR(info.st_mode)) {
    return invalid_argument("'", path, "' is a directory, not a file");
  }
  if (!S_ISREG(info.st_mode) && !S_ISFIFO(info.st_mode) && !S_ISCHR(info.st_mode)) {
    return invalid_argument("'", path, "' is not a regular file");
  }
  if (S_ISREG(info.st_mode) && static_cast<uint64_t>(info.st_size) > max_bytes) {
    return invalid_argument("'", path, "' is ", static_cast<uint64_t>(info.st_size), " bytes, more than the ",
                            max_bytes, " read from such a file");
  }
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return unavailable("'", path, "': cannot open for reading: ", std::strerror(errno));
  }
  // Bounded as it is read too: a pipe or a file that grows has no size to check first.
  std::string contents;
  char buffer[64 * 1024];
  while (true) {
    const ssize_t got = ::read(fd, buffer, sizeof(buffer));
    if (got < 0 && errno == EINTR) {
      continue;
    }
    if (got < 0) {
      const int err = errno;
      ::close(fd);
      return unavailable("'", path, "': read failed: ", std::strerror(err));
    }
    if (got == 0) {
      break;
    }
    if (static_cast<uint64_t>(got) > max_bytes - contents.size()) {
      ::close(fd);
      return invalid_argument("'", path, "' holds more than the ", max_bytes, " bytes read from such a file");
    }
    contents.append(buffer, static_cast<size_t>(got));
  }
  ::close(fd);
  return contents;
}

}  // namespace staticlm
