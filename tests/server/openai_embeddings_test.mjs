// SPDX-License-Identifier: Apache-2.0
// The official `openai` npm client's embeddings.create against `staticlm serve`: by default the
// client asks for base64 and decodes it, with encoding_format "float" it takes the numbers as sent.
// Prints {"base64": [[...], ...], "float": [[...], ...]} for the caller to compare with the server's
// own answer. Usage: node openai_embeddings_test.mjs BASE_URL
import OpenAI from 'openai';

const [baseUrl] = process.argv.slice(2);
if (!baseUrl) {
  console.error('usage: node openai_embeddings_test.mjs BASE_URL');
  process.exit(2);
}

function check(condition, message) {
  if (!condition) throw new Error(message);
}

const client = new OpenAI({ baseURL: `${baseUrl}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 60_000 });
const input = ['In the beginning God created the heaven and the earth.', 'And the earth was without form, and void.'];
const out = {};
for (const format of ['base64', 'float']) {
  const response = await client.embeddings.create({
    model: 'any',
    input,
    ...(format === 'float' ? { encoding_format: 'float' } : {}),
  });
  check(response.object === 'list', `object is ${response.object}`);
  check(response.data.length === 2, `${response.data.length} embeddings for 2 inputs`);
  response.data.forEach((item, i) => {
    check(item.object === 'embedding' && item.index === i, `item ${i}: ${JSON.stringify(item).slice(0, 80)}`);
    check(Array.isArray(item.embedding) && item.embedding.every(Number.isFinite), `item ${i} is not an array of numbers`);
  });
  check(response.usage.prompt_tokens > 0 && response.usage.total_tokens === response.usage.prompt_tokens,
    `usage ${JSON.stringify(response.usage)}`);
  out[format] = response.data.map((item) => item.embedding);
}
console.log(JSON.stringify(out));
