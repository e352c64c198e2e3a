// SPDX-License-Identifier: Apache-2.0
// Chat end to end: where an exported program's chat template comes from (export flag, the
// checkpoint's chat_template.jinja, tokenizer_config.json, the ChatML default), conversations that
// prefill only their new turn, a full context, and `staticlm run --chat` / `inspect` as a user runs them.
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "staticlm/builtin/builtin_runtime.h"
#include "staticlm/chat/conversation.h"
#include "staticlm/chat/program_chat_template.h"
#include "staticlm/core/mapped_file.h"
#include "staticlm/exporter/hf_static_export.h"

#include "cli_runner.h"
#include "export_helpers.h"
#include "fixture_reference.h"

namespace staticlm {
namespace {

namespace fs = std::filesystem;
using testing::small_options;
using testing::temp_path;

const std::string kTemplates = std::string(STATICLM_SOURCE_DIR) + "/tests/fixtures/chat_templates/templates/";

// A copy of a fixture checkpoint that a test may change.
std::string copy_fixture(const std::string& family, const std::string& name) {
  const std::string dir = temp_path(name);
  fs::remove_all(dir);
  fs::copy(testing::fixture_dir(family), dir);
  return dir;
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

struct Opened {
  std::unique_ptr<Engine> engine;
  const Tokenizer* tokenizer = nullptr;
};

Opened open(const std::string& path) {
  auto runtime = builtin_engine_runtime();
  EXPECT_TRUE(runtime.ok());
  auto engine = Engine::open(path, {}, std::move(*runtime));
  EXPECT_TRUE(engine.ok()) << engine.status().to_string();
  Opened opened{std::move(*engine)};
  opened.tokenizer = opened.engine->tokenizer().value();
  return opened;
}

std::string export_program(const std::string& dir, const std::string& name, HfStaticExportOptions options) {
  const std::string path = temp_path(name);
  auto exported = export_hf_static(dir, path, options);
  EXPECT_TRUE(exported.ok()) << exported.status().to_string();
  return path;
}

TEST(ChatTest, ExportEmbedsTheTemplateItIsGiven) {
  HfStaticExportOptions options = small_options();
  options.chat_template_path = kTemplates + "llama3.jinja";
  const std::string path = export_program(testing::fixture_dir("llama3"), "chat_flag.slm", options);
  Opened opened = open(path);
  const auto embedded = opened.engine->file().embedded_file(kEmbeddedChatTemplate);
  ASSERT_TRUE(embedded.has_value());
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(embedded->data()), embedded->size()),
            read_text_file(options.chat_template_path).value());
  EXPECT_EQ(program_chat_template_origin(opened.engine->file()).value(), "embedded chat_template.jinja");
  auto chat = load_program_chat_template(opened.engine->file(), *opened.tokenizer);
  ASSERT_TRUE(chat.ok()) << chat.status().to_string();
  EXPECT_FALSE(chat->is_default);
  EXPECT_TRUE(chat->notice.empty());
  ChatRenderInputs inputs;
  inputs.messages = nlohmann::ordered_json::parse(R"([{"role": "user", "content": "Hi"}])");
  auto rendered = chat->chat_template.render(inputs);
  ASSERT_TRUE(rendered.ok()) << rendered.status().to_string();
  // bos_token comes from the checkpoint's tokenizer_config.json.
  EXPECT_EQ(rendered->rfind("<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>", 0), 0u)
      << *rendered;
  // <|eot_id|> is not a token of this small fixture's vocabulary: the reply stops at the text.
  EXPECT_NE(std::find(chat->stop_strings.begin(), chat->stop_strings.end(), "<|eot_id|>"), chat->stop_strings.end());
}

TEST(ChatTest, TheCheckpointsTemplateFileOrTokenizerConfigIsUsed) {
  const std::string with_file = copy_fixture("llama3", "with_template_file");
  write_file(with_file + "/chat_template.jinja", "{% for m in messages %}<{{ m.content }}>{% endfor %}");
  Opened from_file = open(export_program(with_file, "chat_file.slm", small_options()));
  EXPECT_EQ(program_chat_template_origin(from_file.engine->file()).value(), "embedded chat_template.jinja");

  const std::string with_config = copy_fixture("llama3", "with_template_config");
  auto config = nlohmann::ordered_json::parse(read_text_file(with_config + "/tokenizer_config.json").value());
  config["chat_template"] = {{{"name", "default"}, {"template", "{{ bos_token }}{{ messages[0].content }}|"}}};
  write_file(with_config + "/tokenizer_config.json", config.dump());
  Opened from_config = open(export_program(with_config, "chat_config.slm", small_options()));
  EXPECT_FALSE(from_config.engine->file().embedded_file(kEmbeddedChatTemplate).has_value());
  EXPECT_EQ(program_chat_template_origin(from_config.engine->file()).value(), "embedded tokenizer_config.json");
  auto chat = load_program_chat_template(from_config.engine->file(), *from_config.tokenizer);
  ASSERT_TRUE(chat.ok()) << chat.status().to_string();
  ChatRenderInputs inputs;
  inputs.messages = nlohmann::ordered_json::parse(R"([{"role": "user", "content": "Hi"}])");
  EXPECT_EQ(chat->chat_template.render(inputs).value(), "<|begin_of_text|>Hi|");

  // --chat-template at run time wins over what the program carries.
  const std::string override_path = temp_path("override.jinja");
  write_file(override_path, "override:{{ messages | length }}");
  auto overridden = load_program_chat_template(from_config.engine->file(), *from_config.tokenizer, override_path);
  ASSERT_TRUE(overridden.ok());
  EXPECT_EQ(overridden->chat_template.render(inputs).value(), "override:1");
  EXPECT_NE(overridden->chat_template.origin().find("override.jinja"), std::string::npos);
}

TEST(ChatTest, AProgramWithoutATemplateGetsChatMlWithANotice) {
  Opened opened = open(export_program(testing::fixture_dir("llama3"), "chat_none.slm", small_options()));
  EXPECT_FALSE(program_chat_template_origin(opened.engine->file()).value().has_value());
  auto chat = load_program_chat_template(opened.engine->file(), *opened.tokenizer);
  ASSERT_TRUE(chat.ok()) << chat.status().to_string();
  EXPECT_TRUE(chat->is_default);
  EXPECT_NE(chat->notice.find("chat_none.slm' carries no chat template; using ChatML"), std::string::npos);
  // The fixture has <|im_end|> / <|im_start|> as special tokens: replies end on their ids.
  const int32_t im_end = opened.tokenizer->token_to_id("<|im_end|>").value();
  EXPECT_NE(std::find(chat->end_of_turn_ids.begin(), chat->end_of_turn_ids.end(), im_end), chat->end_of_turn_ids.end());
  GenerationOptions options = chat_generation_options(*opened.engine, *chat);
  EXPECT_NE(std::find(options.eos_ids.begin(), options.eos_ids.end(), im_end), options.eos_ids.end());
  EXPECT_TRUE(options.reuse_cached_prefix);
  EXPECT_FALSE(options.add_special_tokens);
}

TEST(ChatTest, BadTemplatesAreRefusedNamingTheFileAndLine) {
  const std::string broken = temp_path("broken.jinja");
  write_file(broken, "{% for m in messages %}\n{{ m.content }\n{% endfor %}");
  HfStaticExportOptions options = small_options();
  options.chat_template_path = broken;
  auto exported = export_hf_static(testing::fixture_dir("llama3"), temp_path("chat_broken.slm"), options);
  ASSERT_FALSE(exported.ok());
  EXPECT_NE(exported.status().message().find("broken.jinja"), std::string::npos) << exported.status().message();
  EXPECT_NE(exported.status().message().find("line 2"), std::string::npos) << exported.status().message();

  options.chat_template_path = temp_path("missing.jinja");
  exported = export_hf_static(testing::fixture_dir("llama3"), temp_path("chat_missing.slm"), options);
  ASSERT_FALSE(exported.ok());
  EXPECT_NE(exported.status().message().find("missing.jinja"), std::string::npos);

  // A chat_template of the wrong shape in tokenizer_config.json: the program still exports (it can
  // generate), and inspect and chat say what is wrong with it.
  const std::string odd = copy_fixture("llama3", "odd_template_config");
  auto config = nlohmann::ordered_json::parse(read_text_file(odd + "/tokenizer_config.json").value());
  config["chat_template"] = 42;
  write_file(odd + "/tokenizer_config.json", config.dump());
  Opened odd_program = open(export_program(odd, "chat_odd.slm", small_options()));
  auto origin = program_chat_template_origin(odd_program.engine->file());
  ASSERT_FALSE(origin.ok());
  EXPECT_NE(origin.status().message().find("tokenizer_config.json: chat_template: expected a string"),
            std::string::npos)
      << origin.status().message();
  EXPECT_FALSE(load_program_chat_template(odd_program.engine->file(), *odd_program.tokenizer).ok());
  auto inspected = testing::run_cli("inspect " + temp_path("chat_odd.slm"));
  EXPECT_NE(inspected.out.find("chat template: unusable: "), std::string::npos) << inspected.out;

  Opened opened = open(export_program(testing::fixture_dir("llama3"), "chat_plain.slm", small_options()));
  auto loaded = load_program_chat_template(opened.engine->file(), *opened.tokenizer, broken);
  ASSERT_FALSE(loaded.ok());
  EXPECT_NE(loaded.status().message().find("broken.jinja"), std::string::npos);
}

TEST(ChatTest, ALaterTurnPrefillsOnlyWhatIsNew) {
  HfStaticExportOptions export_options = small_options();
  export_options.max_cache_len = 128;
  Opened opened = open(export_program(testing::fixture_dir("llama3"), "chat_turns.slm", export_options));
  auto chat = load_program_chat_template(opened.engine->file(), *opened.tokenizer);
  ASSERT_TRUE(chat.ok());
  GenerationOptions options = chat_generation_options(*opened.engine, *chat);
  options.eos_ids.clear();  // random weights: a fixed number of tokens per reply
  options.max_new_tokens = 5;

  ChatConversation conversation(*opened.engine, *chat, opened.engine->new_session().value());
  conversation.set_system("Be brief.");
  auto first = conversation.send("hello", options);
  ASSERT_TRUE(first.ok()) << first.status().to_string();
  EXPECT_EQ(first->result.cached_prompt_tokens, 0);
  auto second = conversation.send("and again", options);
  ASSERT_TRUE(second.ok()) << second.status().to_string();
  EXPECT_GT(second->result.cached_prompt_tokens, static_cast<int64_t>(first->result.prompt_tokens.size()) - 1);
  EXPECT_EQ(conversation.turns().size(), 4u);

  // The same conversation replayed on a fresh session, with nothing cached, gives the same reply.
  ChatConversation replay(*opened.engine, *chat, opened.engine->new_session().value());
  replay.set_system("Be brief.");
  GenerationOptions fresh = options;
  ASSERT_TRUE(replay.send("hello", fresh).ok());
  auto replayed = replay.send("and again", fresh);
  ASSERT_TRUE(replayed.ok());
  EXPECT_EQ(replayed->result.tokens, second->result.tokens);

  // A reply that runs into the end of the context stops there and says why.
  options.max_new_tokens = 1000;
  auto filling = conversation.send("more", options);
  ASSERT_TRUE(filling.ok()) << filling.status().to_string();
  EXPECT_EQ(filling->result.stop_reason, StopReason::kContextFull);
  EXPECT_EQ(filling->result.prompt_tokens.size() + filling->result.tokens.size() - 1,
            static_cast<size_t>(conversation.context_length()));
  conversation.reset();
  EXPECT_TRUE(conversation.send("fresh start", GenerationOptions(fresh)).ok());
}

TEST(ChatTest, TheOldestTurnsMakeRoomWhenTheContextFills) {
  HfStaticExportOptions export_options = small_options();
  export_options.max_cache_len = 128;
  Opened opened = open(export_program(testing::fixture_dir("llama3"), "chat_drop.slm", export_options));
  auto chat = load_program_chat_template(opened.engine->file(), *opened.tokenizer);
  ASSERT_TRUE(chat.ok());
  GenerationOptions options = chat_generation_options(*opened.engine, *chat);
  options.eos_ids.clear();  // random weights: a fixed number of tokens per reply
  options.max_new_tokens = 16;
  ChatConversation conversation(*opened.engine, *chat, opened.engine->new_session().value());
  conversation.set_system("Be brief.");

  // Each turn adds its message and a 16-token reply; by the eighth the context cannot hold them all.
  int64_t dropped = 0;
  std::string first_kept;
  for (int i = 0; i < 8 && dropped == 0; ++i) {
    auto turn = conversation.send("message " + std::to_string(i), options);
    ASSERT_TRUE(turn.ok()) << "turn " << i << ": " << turn.status().to_string();
    EXPECT_EQ(turn->result.stop_reason, StopReason::kMaxNewTokens) << "a whole reply, every turn";
    dropped = turn->dropped_turns;
    if (dropped > 0) {
      EXPECT_LE(turn->result.prompt_tokens.size() + 16 - 1, static_cast<size_t>(conversation.context_length()));
      // The system message stays, so the session's cache of it is reused.
      EXPECT_GT(turn->result.cached_prompt_tokens, 0);
      EXPECT_EQ(conversation.turns().size(), static_cast<size_t>(2 * (i + 1 - dropped)));
      EXPECT_EQ(conversation.turns()[0]["content"], "message " + std::to_string(dropped));
      EXPECT_EQ(conversation.turns().back()["role"], "assistant");
    }
  }
  ASSERT_GT(dropped, 0) << "no turn was ever dropped";

  // A message that cannot fit even alone is refused, and the conversation stays as it was.
  const size_t turns_before = conversation.turns().size();
  std::string huge;
  for (int i = 0; i < 200; ++i) {
    huge += "word ";
  }
  auto refused = conversation.send(huge, options);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(refused.status().message().find("the system message and this message are"), std::string::npos)
      << refused.status().message();
  EXPECT_EQ(conversation.turns().size(), turns_before);

  // A reply that cannot have its full length even after every turn is dropped gets what fits.
  options.max_new_tokens = 1000;
  auto cut = conversation.send("and finally", options);
  ASSERT_TRUE(cut.ok()) << cut.status().to_string();
  EXPECT_EQ(cut->dropped_turns, static_cast<int64_t>(turns_before / 2));
  EXPECT_EQ(cut->result.stop_reason, StopReason::kContextFull);
  EXPECT_EQ(conversation.turns().size(), 2u);
}

TEST(ChatTest, RunChatAndInspectFromTheCommandLine) {
  const std::string program = temp_path("chat_cli.slm");
  auto exported =
      testing::run_cli("export " + testing::fixture_dir("llama3") + " -o " + program +
                       " --prefill-len 8 --max-cache-len 128 --chat-template " + kTemplates + "chatml.jinja");
  ASSERT_EQ(exported.exit_code, 0) << exported.err;
  auto inspected = testing::run_cli("inspect " + program);
  EXPECT_NE(inspected.out.find("chat template: embedded chat_template.jinja"), std::string::npos) << inspected.out;

  const std::string input = temp_path("chat_input.txt");
  write_file(input, "hello there\n/reset\nsecond \\\nline\n/exit\nnever sent\n");
  auto chatted = testing::run_cli("run " + program + " --chat -n 4 --temp 0 --system 'Be brief.'", STATICLM_CLI, input);
  ASSERT_EQ(chatted.exit_code, 0) << chatted.err;
  EXPECT_NE(chatted.err.find("[conversation reset]"), std::string::npos) << chatted.err;
  // Two replies (the third message comes after /exit), the second reusing the system turn's cache.
  EXPECT_EQ(testing::count_lines(chatted.out), 2u) << chatted.out;
  EXPECT_NE(chatted.err.find("0 of them cached"), std::string::npos) << chatted.err;
  EXPECT_EQ(chatted.err.find(" 0 of them cached", chatted.err.find("[conversation reset]")), std::string::npos)
      << "after /reset the system turn is still cached: " << chatted.err;
  EXPECT_EQ(chatted.err.find("note:"), std::string::npos) << "the program carries a template";

  auto plain = testing::run_cli("run " + program + " -n 2 --system x -p hi");
  EXPECT_NE(plain.exit_code, 0);
  EXPECT_NE(plain.err.find("--system, --system-file and --chat-template apply to --chat"), std::string::npos)
      << plain.err;
  auto both = testing::run_cli("run " + program + " --chat -p hi");
  EXPECT_NE(both.exit_code, 0);
  EXPECT_NE(both.err.find("--chat reads messages from stdin"), std::string::npos) << both.err;
}

}  // namespace
}  // namespace staticlm
