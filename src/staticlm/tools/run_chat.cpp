// `staticlm run MODEL --chat`: a conversation in the terminal, like llama-cli's conversation
// mode. Each message is rendered with the program's chat template and only the new turn is
// prefilled (the session keeps the earlier turns' cache); when the context fills, the oldest turns
// make room. Ctrl-C stops the reply being written and returns to the prompt; at the prompt it ends
// the conversation, as /exit and end of input do.
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <algorithm>
#include <iostream>
#include <string>

#include "staticlm/chat/conversation.h"
#include "staticlm/chat/program_chat_template.h"
#include "staticlm/tools/run_args.h"

namespace staticlm::cli {
namespace {

std::atomic<bool> g_interrupted{false};

extern "C" void on_interrupt(int) {
  g_interrupted.store(true);
}

// Ctrl-C sets a flag instead of killing the process; without SA_RESTART a blocked read of stdin
// returns, so the prompt notices it too. The previous handler comes back on destruction.
class InterruptGuard {
 public:
  InterruptGuard() {
    struct sigaction action = {};
    action.sa_handler = on_interrupt;
    sigemptyset(&action.sa_mask);
    sigaction(SIGINT, &action, &previous_);
  }
  ~InterruptGuard() { sigaction(SIGINT, &previous_, nullptr); }
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;

 private:
  struct sigaction previous_ = {};
};

// Without -n a reply may take this fraction of the context, so the turns before it and the next
// message still fit beside it.
constexpr int64_t kDefaultReplyFraction = 4;

// One message: a line, or several joined where a line ends with a backslash. False at the end of
// input or on Ctrl-C.
bool read_message(bool interactive, std::string& message) {
  message.clear();
  if (interactive) {
    std::fputs("\n> ", stdout);
    std::fflush(stdout);
  }
  std::string line;
  while (std::getline(std::cin, line)) {
    if (!line.empty() && line.back() == '\\') {
      line.pop_back();
      message += line + '\n';
      continue;
    }
    message += line;
    return true;
  }
  return false;
}

void print_turn_stats(const ChatTurn& turn) {
  const GenerationResult& r = turn.result;
  const double decode_rate = r.decode_seconds > 0 ? static_cast<double>(r.decode_steps) / r.decode_seconds : 0.0;
  std::fprintf(stderr, "[%zu tokens, %.1f tok/s; prompt %zu tokens, %lld of them cached; %s]\n", r.tokens.size(),
               decode_rate, r.prompt_tokens.size(), static_cast<long long>(r.cached_prompt_tokens),
               stop_reason_name(r.stop_reason).data());
}

}  // namespace

Status run_chat(const RunArgs& args) {
  if (!args.prompt.empty()) {
    return invalid_argument("--chat reads messages from stdin; -p/--prompt is for a single generation");
  }
  STATICLM_ASSIGN_OR_RETURN(std::unique_ptr<Engine> engine, open_engine(args.model));
  STATICLM_ASSIGN_OR_RETURN(const Tokenizer* tokenizer, engine->tokenizer());
  STATICLM_ASSIGN_OR_RETURN(ProgramChatTemplate chat,
                            load_program_chat_template(engine->file(), *tokenizer, args.chat_template));
  if (!chat.notice.empty()) {
    std::fprintf(stderr, "note: %s\n", chat.notice.c_str());
  }
  STATICLM_ASSIGN_OR_RETURN(std::unique_ptr<LlmSession> session, engine->new_session());
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

  const bool interactive = isatty(STDIN_FILENO) != 0;
  if (interactive) {
    std::fprintf(stderr,
                 "chatting with %s (context %lld tokens, replies of at most %lld; template: %s). /reset starts "
                 "over, /exit or Ctrl-D ends, Ctrl-C stops a reply.\n",
                 engine->file().path().c_str(), static_cast<long long>(context),
                 static_cast<long long>(options.max_new_tokens), chat.chat_template.origin().c_str());
  }
  if (!args.quiet) {
    print_sampling(stderr, options.sampling, args.sampling);  // every reply uses this seed
  }
  InterruptGuard guard;
  std::string message;
  while (read_message(interactive, message)) {
    if (g_interrupted.exchange(false)) {
      break;
    }
    if (message == "/exit" || message == "/quit") {
      break;
    }
    if (message == "/reset") {
      conversation.reset();
      std::fprintf(stderr, "[conversation reset]\n");
      continue;
    }
    if (message.empty()) {
      continue;
    }
    auto turn = conversation.send(message, options, [](std::string_view text) {
      std::fwrite(text.data(), 1, text.size(), stdout);
      std::fflush(stdout);
    });
    std::fputc('\n', stdout);
    std::fflush(stdout);
    g_interrupted.store(false);
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
