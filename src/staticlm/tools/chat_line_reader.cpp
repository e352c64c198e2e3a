// SPDX-License-Identifier: Apache-2.0
#include "staticlm/tools/chat_line_reader.h"

#include <histedit.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <clocale>
#include <cstdio>
#include <cstdlib>
#include <cwchar>
#include <string_view>
#include <utility>

namespace staticlm::cli {
namespace {

// The terminal wraps pasted text in these once bracketed paste mode (DEC private mode 2004) is on.
constexpr std::string_view kBracketedPasteOn = "\033[?2004h";
constexpr std::string_view kBracketedPasteOff = "\033[?2004l";
constexpr char kPasteStart[] = "\033[200~";
constexpr std::wstring_view kPasteEnd = L"\033[201~";

// libedit's prompt callback takes no const.
char g_prompt[] = "> ";
char g_continuation_prompt[] = "... ";

// True once `fd` has input (or its end, or an error for read() to report); false once `wake_fd`
// is readable.
bool wait_for_input(int fd, int wake_fd) {
  pollfd fds[2] = {{fd, POLLIN, 0}, {wake_fd, POLLIN, 0}};
  while (poll(fds, 2, -1) < 0) {
    if (errno != EINTR) {
      return true;
    }
  }
  return (fds[1].revents & POLLIN) == 0;
}

extern "C" char* chat_prompt(EditLine* el);
extern "C" int read_terminal_char(EditLine* el, wchar_t* out);
extern "C" unsigned char insert_bracketed_paste(EditLine* el, int);

class TerminalLineReader final : public ChatLineReader {
 public:
  TerminalLineReader(EditLine* el, History* history, FILE* out, int wake_fd)
      : el_(el), history_(history), out_(out), wake_fd_(wake_fd) {
    const char* term = std::getenv("TERM");
    bracketed_paste_ = term != nullptr && std::string_view(term) != "dumb";
  }
  ~TerminalLineReader() override {
    el_end(el_);  // gives the terminal its settings back
    history_end(history_);
  }
  TerminalLineReader(const TerminalLineReader&) = delete;
  TerminalLineReader& operator=(const TerminalLineReader&) = delete;

  bool read_line(bool continuation, std::string& line) override {
    continuation_ = continuation;
    el_resize(el_);  // the window may have changed size while a reply streamed
    // On only while a line is edited, so text pasted while a reply streams and the programs run
    // after this one see no markers.
    write_terminal(kBracketedPasteOn);
    int count = 0;
    const char* text = el_gets(el_, &count);
    write_terminal(kBracketedPasteOff);
    if (text == nullptr || count <= 0) {
      return false;
    }
    line.assign(text, static_cast<size_t>(count));
    if (!line.empty() && line.back() == '\n') {
      line.pop_back();
    }
    return true;
  }

  void remember(const std::string& message) override {
    HistEvent event;
    history(history_, &event, H_ENTER, message.c_str());
  }

  bool continuation() const { return continuation_; }
  int wake_fd() const { return wake_fd_; }

 private:
  void write_terminal(std::string_view bytes) {
    if (bracketed_paste_) {
      std::fwrite(bytes.data(), 1, bytes.size(), out_);
      std::fflush(out_);
    }
  }

  EditLine* el_;
  History* history_;
  FILE* out_;
  int wake_fd_;
  bool bracketed_paste_ = false;
  bool continuation_ = false;
};

const TerminalLineReader* reader_of(EditLine* el) {
  void* data = nullptr;
  el_get(el, EL_CLIENTDATA, &data);
  return static_cast<const TerminalLineReader*>(data);
}

char* chat_prompt(EditLine* el) {
  return reader_of(el)->continuation() ? g_continuation_prompt : g_prompt;
}

// libedit's own reader retries a read() a signal interrupts; this one also waits on the wake
// descriptor, and decodes UTF-8 (the locale's multibyte encoding) as libedit's does.
int read_terminal_char(EditLine* el, wchar_t* out) {
  const int wake_fd = reader_of(el)->wake_fd();
  char bytes[MB_LEN_MAX];
  size_t count = 0;
  while (true) {
    if (!wait_for_input(STDIN_FILENO, wake_fd)) {
      errno = EINTR;
      return -1;
    }
    const ssize_t got = read(STDIN_FILENO, &bytes[count], 1);
    if (got == 0) {
      return 0;
    }
    if (got < 0) {
      if (errno == EINTR) {
        continue;
      }
      return -1;
    }
    ++count;
    std::mbstate_t state{};
    const size_t decoded = std::mbrtowc(out, bytes, count, &state);
    if (decoded == static_cast<size_t>(-2) && count < sizeof bytes) {
      continue;  // the rest of the character
    }
    if (decoded == static_cast<size_t>(-1) || decoded == static_cast<size_t>(-2)) {
      count = 0;  // not UTF-8: dropped, as libedit drops it
      continue;
    }
    return 1;
  }
}

// Bound to the paste-start marker: inserts everything up to the end marker into the line, inner
// newlines included, so a pasted block is edited and sent as one message.
unsigned char insert_bracketed_paste(EditLine* el, int) {
  std::wstring text;
  wchar_t c = 0;
  while (text.size() < kPasteEnd.size() ||
         std::wstring_view(text).substr(text.size() - kPasteEnd.size()) != kPasteEnd) {
    if (el_wgetc(el, &c) != 1) {
      return CC_EOF;  // end of input, or Ctrl-C, in the middle of a paste
    }
    text.push_back(c);
  }
  text.resize(text.size() - kPasteEnd.size());
  // Terminals send a pasted line break as CR (some as CR LF).
  std::wstring pasted;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == L'\r') {
      pasted.push_back(L'\n');
      if (i + 1 < text.size() && text[i + 1] == L'\n') {
        ++i;
      }
    } else {
      pasted.push_back(text[i]);
    }
  }
  if (!pasted.empty() && el_winsertstr(el, pasted.c_str()) != 0) {
    return CC_ERROR;
  }
  return CC_REFRESH;
}

// libedit decodes input with the C library's multibyte functions, which read UTF-8 only under a
// UTF-8 locale.
void use_multibyte_ctype() {
  if (std::setlocale(LC_CTYPE, "") == nullptr || MB_CUR_MAX == 1) {
    std::setlocale(LC_CTYPE, "C.UTF-8");
  }
}

// Reads with read() rather than a stdio stream, whose buffer poll() could not see.
class FdLineReader final : public ChatLineReader {
 public:
  FdLineReader(int fd, int wake_fd, bool prompt) : fd_(fd), wake_fd_(wake_fd), prompt_(prompt) {}

  bool read_line(bool continuation, std::string& line) override {
    if (prompt_) {
      std::fputs(continuation ? g_continuation_prompt : g_prompt, stdout);
      std::fflush(stdout);
    }
    while (true) {
      const size_t newline = buffer_.find('\n', searched_);
      if (newline != std::string::npos) {
        line.assign(buffer_, 0, newline);
        buffer_.erase(0, newline + 1);
        searched_ = 0;
        return true;
      }
      searched_ = buffer_.size();
      if (at_end_) {
        // A last line without a line end is still a line.
        line = std::exchange(buffer_, std::string());
        searched_ = 0;
        return !line.empty();
      }
      if (!wait_for_input(fd_, wake_fd_)) {
        return false;
      }
      char chunk[4096];
      const ssize_t got = read(fd_, chunk, sizeof chunk);
      if (got < 0 && errno == EINTR) {
        continue;
      }
      if (got <= 0) {
        at_end_ = true;
      } else {
        buffer_.append(chunk, static_cast<size_t>(got));
      }
    }
  }
  void remember(const std::string&) override {}

 private:
  int fd_;
  int wake_fd_;
  bool prompt_;
  std::string buffer_;
  size_t searched_ = 0;  // buffer_[0, searched_) holds no line end
  bool at_end_ = false;
};

}  // namespace

std::unique_ptr<ChatLineReader> open_terminal_line_reader(int wake_fd) {
  FILE* out = isatty(STDOUT_FILENO) != 0 ? stdout : (isatty(STDERR_FILENO) != 0 ? stderr : nullptr);
  if (isatty(STDIN_FILENO) == 0 || out == nullptr) {
    return nullptr;
  }
  use_multibyte_ctype();
  EditLine* el = el_init("staticlm", stdin, out, stderr);
  if (el == nullptr) {
    return nullptr;
  }
  History* history_list = history_init();
  if (history_list == nullptr) {
    el_end(el);
    return nullptr;
  }
  HistEvent event;
  history(history_list, &event, H_SETSIZE, 1000);
  history(history_list, &event, H_SETUNIQUE, 1);
  auto reader = std::make_unique<TerminalLineReader>(el, history_list, out, wake_fd);
  el_set(el, EL_CLIENTDATA, static_cast<void*>(reader.get()));
  el_set(el, EL_GETCFN, &read_terminal_char);
  el_set(el, EL_EDITOR, "emacs");
  el_set(el, EL_PROMPT, &chat_prompt);
  el_set(el, EL_HIST, history, history_list);
  el_set(el, EL_ADDFN, "staticlm-paste", "insert a bracketed paste", &insert_bracketed_paste);
  el_set(el, EL_BIND, kPasteStart, "staticlm-paste", nullptr);
  el_source(el, nullptr);  // the user's ~/.editrc, as every libedit program reads it
  return reader;
}

std::unique_ptr<ChatLineReader> open_fd_line_reader(int fd, int wake_fd, bool prompt) {
  return std::make_unique<FdLineReader>(fd, wake_fd, prompt);
}

bool read_chat_message(ChatLineReader& reader, std::string& message) {
  message.clear();
  std::string line;
  bool continuation = false;
  while (reader.read_line(continuation, line)) {
    if (!line.empty() && line.back() == '\r') {
      line.pop_back();
    }
    if (!line.empty() && line.back() == '\\') {
      line.pop_back();
      message += line;
      message += '\n';
      continuation = true;
      continue;
    }
    message += line;
    if (!message.empty()) {
      reader.remember(message);
    }
    return true;
  }
  return false;
}

}  // namespace staticlm::cli
