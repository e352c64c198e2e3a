// SPDX-License-Identifier: Apache-2.0
// `staticlm run MODEL --chat`: a conversation in the terminal, like llama-cli's conversation
// mode. Each message is rendered with the program's chat template and only the new turn is
// prefilled (the session keeps the earlier turns' cache); when the context fills, the oldest turns
// make room. Ctrl-C stops the reply being written and returns to the prompt; at the prompt it ends
// the conversation, as /exit and end of input do.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <string>
#include <utility>

#include "staticlm/chat/conversation.h"
#include "staticlm/chat/program_chat_template.h"
#include "staticlm/tools/chat_line_reader.h"
#include "staticlm/tools/run_args.h"

namespace staticlm::cli {
namespace {

std::atomic<bool> g_interrupted{false};
// Atomic: SIGINT may run the handler on any thread, the engine's workers included.
std::atomic<int> g_wake_write_fd{-1};

extern "C" void on_interrupt(int) {
  g_interrupted.store(true);
  const int saved_errno = errno;
  const char byte = 1;
  if (write(g_wake_write_fd.load(), &byte, 1) < 0) {
    // A full pipe already holds a wake-up.
  }
  errno = saved_errno;
}

// Ctrl-C sets a flag, which stops a reply, instead of killing the process, and writes to a pipe
// that the line readers wait on beside stdin: a flag alone would be missed by a read that starts
// just after the signal. The previous handler comes back on destruction.
class InterruptGuard {
 public:
  InterruptGuard() {
    int fds[2] = {-1, -1};
    if (pipe2(fds, O_NONBLOCK | O_CLOEXEC) == 0) {
      wake_read_fd_ = fds[0];
      g_wake_write_fd.store(fds[1]);
    }
    struct sigaction action = {};
    action.sa_handler = on_interrupt;
    sigemptyset(&action.sa_mask);
    sigaction(SIGINT, &action, &previous_);
  }
  ~InterruptGuard() {
    sigaction(SIGINT, &previous_, nullptr);
    if (wake_read_fd_ >= 0) {
      close(wake_read_fd_);
      close(g_wake_write_fd.exchange(-1));
    }
  }
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;

  // Readable once Ctrl-C was pressed, until take(); -1 (which poll ignores) without a pipe.
  int wake_fd() const { return wake_read_fd_; }

  // Whether Ctrl-C was pressed since the last call; forgets it.
  bool take() {
    const bool interrupted = g_interrupted.exchange(false);
    char drained[64];
    while (wake_read_fd_ >= 0 && read(wake_read_fd_, drained, sizeof drained) > 0) {
    }
    return interrupted;
  }

 private:
  struct sigaction previous_ = {};
  int wake_read_fd_ = -1;
};

// Without -n a reply may take this fraction of the context, so the turns before it and the next
// message still fit beside it.
constexpr int64_t kDefaultReplyFraction = 4;

constexpr std::string_view kCommandList =
    "commands:\n"
    "  /help          this list\n"
    "  /reset         forget the conversation (the system message stays)\n"
    "  /exit, /quit   end the conversation (so do Ctrl-D, and Ctrl-C at the prompt)\n"
    "a line ending in \\ continues on the next one, and a pasted block of lines is one message;\n"
    "start a message with // to send one beginning with /; Ctrl-C stops a reply\n";

enum class ChatInput { kEmpty, kMessage, kHelp, kReset, kExit, kUnknownCommand };

// A message starting with one slash is a command; one starting with "//" loses its first slash
// and goes to the model.
ChatInput parse_chat_input(std::string& message) {
  const size_t end = message.find_last_not_of(" \t\r\n");
  if (end == std::string::npos) {
    return ChatInput::kEmpty;
  }
  if (message[0] != '/') {
    return ChatInput::kMessage;
  }
  if (message.size() > 1 && message[1] == '/') {
    message.erase(0, 1);
    return ChatInput::kMessage;
  }
  const std::string_view command = std::string_view(message).substr(0, end + 1);
  if (command == "/help") return ChatInput::kHelp;
  if (command == "/reset") return ChatInput::kReset;
  if (command == "/exit" || command == "/quit") return ChatInput::kExit;
  return ChatInput::kUnknownCommand;
}

void print_turn_stats(const ChatTurn& turn) {
  const GenerationResult& r = turn.result;
  const double decode_rate = r.decode_seconds > 0 ? static_cast<double>(r.decode_steps) / r.decode_seconds : 0.0;
  const std::string guesses = r.speculation.drafted > 0 ? str_cat("; ", r.speculation.accepted, " of ",
                                                                  r.speculation.drafted, " guessed tokens kept")
                                                        : std::string();
  std::fprintf(stderr, "[%zu tokens, %.1f tok/s; prompt %zu tokens, %lld of them cached; %s%s]\n", r.tokens.size(),
               decode_rate, r.prompt_tokens.size(), static_cast<long long>(r.cached_prompt_tokens),
               stop_reason_name(r.stop_reason).data(), guesses.c_str());
}

}  // namespace

Status run_chat(const RunArgs& args) {
  if (!args.prompt.empty()) {
    return invalid_argument("--chat reads messages from stdin; -p/--prompt and -f/--file are for a single generation");
  }
  STATICLM_ASSIGN_OR_RETURN(std::unique_ptr<Engine> engine, open_engine(args.model));
  STATICLM_ASSIGN_OR_RETURN(const Tokenizer* tokenizer, engine->tokenizer());
  STATICLM_ASSIGN_OR_RETURN(ProgramChatTemplate chat,
                            load_program_chat_template(engine->file(), *tokenizer, args.chat_template));
  if (!chat.notice.empty()) {
    std::fprintf(stderr, "note: %s\n", chat.notice.c_str());
  }
  STATICLM_ASSIGN_OR_RETURN(std::unique_ptr<LlmSession> session, engine->new_session());
  STATICLM_ASSIGN_OR_RETURN(Speculation speculation, open_speculation(args.speculation, args.model, *engine));
  std::unique_ptr<LlmSession> draft_session;
  if (speculation.draft) {
    STATICLM_ASSIGN_OR_RETURN(draft_session, speculation.draft->new_session());
    speculation.options.draft = draft_session.get();
  }
  ChatConversation conversation(*engine, chat, std::move(session));
  conversation.set_system(args.system);

  GenerationOptions options = chat_generation_options(*engine, chat);
  STATICLM_ASSIGN_OR_RETURN(options.sampling, choose_sampling(*engine, args.sampling));
  options.stop_strings.insert(options.stop_strings.end(), args.stop.begin(), args.stop.end());
  const int64_t context = conversation.context_length();
  if (args.max_new_tokens_given && args.max_new_tokens > context) {
    return invalid_argument("-n: a reply cannot be longer than the context; expected at most ", context,
                            " tokens, found ", args.max_new_tokens);
  }
  options.max_new_tokens =
      args.max_new_tokens_given ? args.max_new_tokens : std::max<int64_t>(1, context / kDefaultReplyFraction);
  options.cancel = &g_interrupted;
  options.speculation = speculation.options;

  InterruptGuard interrupts;
  const bool interactive = isatty(STDIN_FILENO) != 0;
  std::unique_ptr<ChatLineReader> reader = interactive ? open_terminal_line_reader(interrupts.wake_fd()) : nullptr;
  if (!reader) {
    reader = open_fd_line_reader(STDIN_FILENO, interrupts.wake_fd(), interactive);
  }
  if (interactive) {
    std::fprintf(stderr,
                 "chatting with %s (context %lld tokens, replies of at most %lld; template: %s). /help lists the "
                 "commands, /exit or Ctrl-D ends, Ctrl-C stops a reply.\n",
                 engine->file().path().c_str(), static_cast<long long>(context),
                 static_cast<long long>(options.max_new_tokens), chat.chat_template.origin().c_str());
  }
  if (!args.quiet) {
    print_sampling(stderr, options.sampling, args.sampling);  // every reply uses this seed
  }
  std::string message;
  while (true) {
    if (interactive) {
      std::fputc('\n', stdout);
      std::fflush(stdout);
    }
    if (!read_chat_message(*reader, message) || interrupts.take()) {
      break;
    }
    const ChatInput input = parse_chat_input(message);
    if (input == ChatInput::kEmpty) {
      continue;
    }
    if (input == ChatInput::kExit) {
      break;
    }
    if (input == ChatInput::kHelp) {
      std::fputs(kCommandList.data(), stderr);
      continue;
    }
    if (input == ChatInput::kReset) {
      conversation.reset();
      std::fprintf(stderr, "[conversation reset]\n");
      continue;
    }
    if (input == ChatInput::kUnknownCommand) {
      const std::string command = message.substr(0, message.find_first_of(" \t\n"));
      std::fprintf(stderr,
                   "[unknown command '%s': /help lists the commands; start a message with // to send one "
                   "beginning with /]\n",
                   command.c_str());
      continue;
    }
    auto turn = conversation.send(message, options, [](std::string_view text) {
      std::fwrite(text.data(), 1, text.size(), stdout);
      std::fflush(stdout);
    });
    std::fputc('\n', stdout);
    std::fflush(stdout);
    interrupts.take();  // a Ctrl-C that stopped this reply does not end the conversation
    if (!turn.ok()) {
      // A message the context cannot hold, or one the template refuses (roles that must
      // alternate, ...), is this turn's problem: say so and keep the conversation.
      const StatusCode code = turn.status().code();
      if (code == StatusCode::kResourceExhausted || code == StatusCode::kInvalidArgument) {
        std::fprintf(stderr, "[%s]\n", turn.status().message().c_str());
        continue;
      }
      return with_flag_names(turn.status(), kRunFlags);
    }
    if (turn->dropped_turns > 0) {
      std::fprintf(stderr, "[%lld earliest turn%s dropped to make room in the context (%lld tokens)]\n",
                   static_cast<long long>(turn->dropped_turns), turn->dropped_turns == 1 ? "" : "s",
                   static_cast<long long>(context));
    }
    if (!args.quiet) {
      print_turn_stats(*turn);
    }
  }
  if (interactive) {
    std::fputc('\n', stdout);
  }
  return ok_status();
}

}  // namespace staticlm::cli
