// SPDX-License-Identifier: Apache-2.0
// The official `openai` npm client's tool calls against `staticlm serve` started with a template
// that has a call syntax: a forced call, whole and streamed (the client's stream helper assembles
// the tool_calls deltas), the call sent back with the tool's answer, and a bad schema's error.
// Usage: node openai_tools_test.mjs BASE_URL
import OpenAI from 'openai';

const [baseUrl] = process.argv.slice(2);
if (!baseUrl) {
  console.error('usage: node openai_tools_test.mjs BASE_URL');
  process.exit(2);
}

let step = 'start';
function check(condition, message) {
  if (!condition) throw new Error(message);
}

const client = new OpenAI({ baseURL: `${baseUrl}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 60_000 });
const tools = [{
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'The weather in a city',
    parameters: {
      type: 'object',
      properties: { city: { type: 'string', maxLength: 10 }, unit: { enum: ['celsius', 'fahrenheit'] } },
      required: ['city', 'unit'],
      additionalProperties: false,
    },
  },
}];
const messages = [{ role: 'user', content: 'What is the weather in Jerusalem?' }];
const request = { model: 'any', messages, tools, tool_choice: 'required', temperature: 1, seed: 11, max_tokens: 120 };

function checkCall(call) {
  check(call.type === 'function' && call.function.name === 'get_weather', `call ${JSON.stringify(call)}`);
  const args = JSON.parse(call.function.arguments);
  check(typeof args.city === 'string' && args.city.length <= 10, `city ${args.city}`);
  check(['celsius', 'fahrenheit'].includes(args.unit), `unit ${args.unit}`);
  check(Object.keys(args).length === 2, `arguments ${call.function.arguments}`);
}

try {
  step = 'forced call';
  const whole = await client.chat.completions.create(request);
  const choice = whole.choices[0];
  check(choice.finish_reason === 'tool_calls', `finish_reason ${choice.finish_reason}`);
  check(choice.message.content === null && choice.message.tool_calls.length === 1, JSON.stringify(choice.message));
  checkCall(choice.message.tool_calls[0]);

  step = 'streamed call';
  const stream = client.beta.chat.completions.stream({ ...request });
  const streamed = await stream.finalChatCompletion();
  const call = streamed.choices[0].message.tool_calls[0];
  checkCall(call);
  check(call.function.arguments === choice.message.tool_calls[0].function.arguments, 'streamed arguments differ');
  check(streamed.choices[0].finish_reason === 'tool_calls', `streamed finish_reason ${streamed.choices[0].finish_reason}`);

  step = 'answer sent back';
  const answer = await client.chat.completions.create({
    model: 'any',
    messages: [...messages, { ...choice.message, content: '' },
      { role: 'tool', tool_call_id: choice.message.tool_calls[0].id, content: '{"temperature": 31}' }],
    max_tokens: 6,
    temperature: 0,
  });
  check(typeof answer.choices[0].message.content === 'string', 'no text after the tool answer');

  step = 'refused schema';
  try {
    await client.chat.completions.create({
      ...request,
      tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object', properties: { a: { not: {} } } } } }],
    });
    check(false, 'an unsupported keyword was accepted');
  } catch (error) {
    check(error instanceof OpenAI.BadRequestError, `error type ${error.constructor.name}`);
    check(error.param === 'tools[0].function.parameters', `param ${error.param}`);
  }
  console.log('openai client tool calls: ok');
} catch (error) {
  console.error(`step '${step}': ${error.stack || error}`);
  process.exit(1);
}
