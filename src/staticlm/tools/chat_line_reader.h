// SPDX-License-Identifier: Apache-2.0
// Where `staticlm run --chat` reads its messages. On a terminal, libedit edits the line (arrow
// keys, history of the session, Ctrl-A / Ctrl-E, ...) in non-canonical mode, so a line is not cut
// at the terminal's 4,095-byte canonical limit, and a bracketed paste of several lines stays in
// the line being edited. Anything else (a pipe, a file) is read as plain lines.
#pragma once

#include <memory>
#include <string>

namespace staticlm::cli {

class ChatLineReader {
 public:
  virtual ~ChatLineReader() = default;

  // One line without its line ending; a pasted block keeps its inner newlines. `continuation`:
  // the line continues a message (a different prompt). False at the end of input (Ctrl-D) and
  // once the reader's wake descriptor is readable (Ctrl-C).
  virtual bool read_line(bool continuation, std::string& line) = 0;
  // Adds a whole message to the history the Up arrow walks through.
  virtual void remember(const std::string& message) = 0;
};

// The readers wait on `wake_fd` beside their input and stop waiting once it is readable (the
// chat's Ctrl-C handler writes to a pipe), so an interrupt that comes just before a read is not
// lost as a flag would be. -1: no wake-up.

// libedit on the terminal at stdin, drawing on stdout (stderr when stdout is not a terminal);
// nullptr when neither output is a terminal or libedit cannot use it. Sets LC_CTYPE from the
// environment (C.UTF-8 when that is not a multibyte locale) so that libedit reads UTF-8.
std::unique_ptr<ChatLineReader> open_terminal_line_reader(int wake_fd);

// Plain lines read from `fd`, without history; `prompt`: a prompt on stdout before each line (a
// terminal libedit cannot draw on).
std::unique_ptr<ChatLineReader> open_fd_line_reader(int fd, int wake_fd, bool prompt);

// One message: a line, or lines joined with "\n" where a line ends with a backslash. A trailing
// "\r" is dropped from every line, so CRLF input reads as LF input. False at the end of input or
// on an interrupt, as read_line.
bool read_chat_message(ChatLineReader& reader, std::string& message);

}  // namespace staticlm::cli
