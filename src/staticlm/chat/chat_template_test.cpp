// SPDX-License-Identifier: Apache-2.0
// ChatTemplate: where tokenizer_config.json keeps a template and special tokens, rendering with the
// variables transformers passes, and errors that say which template failed where.
#include "staticlm/chat/chat_template.h"

#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

namespace staticlm {
namespace {

TEST(ChatTemplateTest, FindsTheTemplateInTokenizerConfig) {
  auto plain = chat_template_from_tokenizer_config(R"({"chat_template": "{{ messages }}"})", "cfg");
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(*plain, "{{ messages }}");
  auto named = chat_template_from_tokenizer_config(
      R"({"chat_template": [{"name": "tool_use", "template": "T"}, {"name": "default", "template": "D"}]})", "cfg");
  ASSERT_TRUE(named.ok());
  EXPECT_EQ(*named, "D");

  auto none = chat_template_from_tokenizer_config(R"({"bos_token": "<s>"})", "cfg");
  EXPECT_EQ(none.status().code(), StatusCode::kNotFound);
  auto no_default = chat_template_from_tokenizer_config(R"({"chat_template": [{"name": "x", "template": "X"}]})",
                                                        "'m/tokenizer_config.json'");
  ASSERT_FALSE(no_default.ok());
  EXPECT_NE(no_default.status().message().find("'m/tokenizer_config.json': chat_template"), std::string::npos);
  auto wrong_type = chat_template_from_tokenizer_config(R"({"chat_template": 5})", "cfg");
  ASSERT_FALSE(wrong_type.ok());
  EXPECT_NE(wrong_type.status().message().find("found number"), std::string::npos);
  auto not_json = chat_template_from_tokenizer_config("{", "cfg");
  ASSERT_FALSE(not_json.ok());
  EXPECT_NE(not_json.status().message().find("cfg: expected a JSON object"), std::string::npos);
}

TEST(ChatTemplateTest, ReadsSpecialTokensAsStringsOrAddedTokens) {
  auto tokens = special_tokens_from_tokenizer_config(
      R"({"bos_token": "<s>", "eos_token": {"content": "</s>", "lstrip": false}, "pad_token": null})", "cfg");
  ASSERT_TRUE(tokens.ok()) << tokens.status().to_string();
  ASSERT_EQ(tokens->size(), 2u);
  EXPECT_EQ((*tokens)[0], std::make_pair(std::string("bos_token"), std::string("<s>")));
  EXPECT_EQ((*tokens)[1], std::make_pair(std::string("eos_token"), std::string("</s>")));
  auto bad = special_tokens_from_tokenizer_config(R"({"unk_token": 3})", "cfg");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("unk_token"), std::string::npos);
}

TEST(ChatTemplateTest, RendersWithTransformersVariables) {
  auto parsed = ChatTemplate::parse(
      "{{ bos_token }}{% for m in messages %}[{{ m.role }}:{{ m.content }}]{% endfor %}"
      "{% if tools %}tools={{ tools | length }}{% endif %}{% if add_generation_prompt %}>{% endif %}"
      "{% if enable_thinking is defined %}think={{ enable_thinking }}{% endif %}{{ documents is none }}",
      "test template", {{"bos_token", "<s>"}});
  ASSERT_TRUE(parsed.ok()) << parsed.status().to_string();
  ChatRenderInputs inputs;
  inputs.messages = nlohmann::ordered_json::parse(R"([{"role": "user", "content": "hi"}])");
  auto rendered = parsed->render(inputs);
  ASSERT_TRUE(rendered.ok()) << rendered.status().to_string();
  EXPECT_EQ(*rendered, "<s>[user:hi]>True");
  inputs.add_generation_prompt = false;
  inputs.tools = nlohmann::ordered_json::parse(R"([{"type": "function"}])");
  inputs.extra = {{"enable_thinking", false}};
  rendered = parsed->render(inputs);
  ASSERT_TRUE(rendered.ok());
  EXPECT_EQ(*rendered, "<s>[user:hi]tools=1think=FalseTrue");
  EXPECT_TRUE(parsed->uses_tools());
  auto mentions = ChatTemplate::parse("{# no tools here #}{{ 'tools' }}", "mentions", {});
  ASSERT_TRUE(mentions.ok());
  EXPECT_FALSE(mentions->uses_tools()) << "the word in a comment or a string is not the variable";

  inputs.extra = {{"messages", 1}};
  auto shadowed = parsed->render(inputs);
  ASSERT_FALSE(shadowed.ok());
  EXPECT_NE(shadowed.status().message().find("'messages' is set by the request"), std::string::npos);
}

TEST(ChatTemplateTest, ErrorsNameTheTemplateAndWhere) {
  auto broken = ChatTemplate::parse("hello\n{% if %}", "'model.slm': embedded chat_template.jinja", {});
  ASSERT_FALSE(broken.ok());
  EXPECT_NE(broken.status().message().find("'model.slm': embedded chat_template.jinja"), std::string::npos);
  EXPECT_NE(broken.status().message().find("line 2"), std::string::npos) << broken.status().message();

  auto strict = ChatTemplate::parse(
      "{% for m in messages %}{% if m.role == 'system' %}{{ raise_exception('no system turns') }}{% endif %}"
      "{% endfor %}",
      "strict", {});
  ASSERT_TRUE(strict.ok());
  ChatRenderInputs inputs;
  inputs.messages = nlohmann::ordered_json::parse(R"([{"role": "system", "content": "x"}])");
  auto raised = strict->render(inputs);
  ASSERT_FALSE(raised.ok());
  EXPECT_NE(raised.status().message().find("no system turns"), std::string::npos);
  EXPECT_NE(raised.status().message().find("chat template (strict)"), std::string::npos);
}

std::string read_template_fixture(const std::string& name) {
  std::ifstream in(std::string(STATICLM_SOURCE_DIR) + "/tests/fixtures/chat_templates/templates/" + name + ".jinja");
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_FALSE(text.str().empty()) << name;
  return text.str();
}

TEST(ChatTemplateTest, GemmaTwoRefusesASystemTurnWithItsOwnMessage) {
  ChatRenderInputs inputs;
  inputs.messages = nlohmann::ordered_json::parse(
      R"([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}])");
  auto gemma2 =
      ChatTemplate::parse(read_template_fixture("gemma2"), "'gemma-2-2b-it': chat_template", {{"bos_token", "<bos>"}});
  ASSERT_TRUE(gemma2.ok()) << gemma2.status().to_string();
  auto refused = gemma2->render(inputs);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("System role not supported"), std::string::npos)
      << refused.status().message();
  EXPECT_NE(refused.status().message().find("'gemma-2-2b-it': chat_template"), std::string::npos)
      << refused.status().message();

  // Gemma 3's template folds the system text into the first user turn instead.
  auto gemma3 = ChatTemplate::parse(read_template_fixture("gemma3"), "gemma3", {{"bos_token", "<bos>"}});
  ASSERT_TRUE(gemma3.ok()) << gemma3.status().to_string();
  auto folded = gemma3->render(inputs);
  ASSERT_TRUE(folded.ok()) << folded.status().to_string();
  EXPECT_EQ(*folded, "<bos><start_of_turn>user\nBe brief.\n\nHi<end_of_turn>\n<start_of_turn>model\n");
}

TEST(ChatTemplateTest, TheDefaultIsChatMl) {
  auto parsed = ChatTemplate::parse(std::string(default_chat_template_source()), "default", {});
  ASSERT_TRUE(parsed.ok()) << parsed.status().to_string();
  EXPECT_FALSE(parsed->uses_tools());
  ChatRenderInputs inputs;
  inputs.messages = nlohmann::ordered_json::parse(
      R"([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}])");
  auto rendered = parsed->render(inputs);
  ASSERT_TRUE(rendered.ok());
  EXPECT_EQ(*rendered,
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
            "<|im_start|>assistant\n");
  inputs.messages = nlohmann::ordered_json::parse(R"([{"role": "user", "content": [1]}])");
  EXPECT_FALSE(parsed->render(inputs).ok()) << "the default takes text content only";
}

}  // namespace
}  // namespace staticlm
