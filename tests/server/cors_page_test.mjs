// SPDX-License-Identifier: Apache-2.0
// A page of one origin calling `staticlm serve` on another, in headless Chromium: the browser's own
// CORS checks decide. Usage: node cors_page_test.mjs PAGE_URL API_BASE API_KEY allowed|blocked
// "allowed": the preflighted, authorized chat completion and a refused request (its 400 body) are
// both readable by the page; "blocked": the browser refuses the page the reply.
import { chromium } from 'playwright-core';

const [pageUrl, apiBase, apiKey, expected] = process.argv.slice(2);
if (!pageUrl || !apiBase || !apiKey || !['allowed', 'blocked'].includes(expected)) {
  console.error('usage: node cors_page_test.mjs PAGE_URL API_BASE API_KEY allowed|blocked');
  process.exit(2);
}

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  args: ['--no-sandbox'],
});
try {
  const page = await browser.newPage();
  await page.goto(pageUrl, { waitUntil: 'load' });
  const outcome = await page.evaluate(async ({ apiBase, apiKey }) => {
    const call = async (body) => {
      try {
        const reply = await fetch(`${apiBase}/v1/chat/completions`, {
          method: 'POST',
          headers: { Authorization: `Bearer ${apiKey}`, 'Content-Type': 'application/json' },
          body: JSON.stringify(body),
        });
        return { status: reply.status, body: await reply.json() };
      } catch (error) {
        return { error: String(error) };
      }
    };
    const good = await call({ messages: [{ role: 'user', content: 'Who made the heaven?' }], max_tokens: 4, temperature: 0 });
    const bad = await call({ messages: [{ role: 'user', content: 'hi' }], temperature: 'hot' });
    return { origin: location.origin, good, bad };
  }, { apiBase, apiKey });
  const summary = JSON.stringify(outcome);
  if (expected === 'allowed') {
    if (outcome.good.status !== 200 || !outcome.good.body.choices) throw new Error(`the page could not read the reply: ${summary}`);
    if (outcome.bad.status !== 400 || outcome.bad.body.error.param !== 'temperature') throw new Error(`the page could not read the error: ${summary}`);
  } else if (!outcome.good.error || !outcome.bad.error) {
    throw new Error(`the browser let another origin read the replies: ${summary}`);
  }
  console.log(`[cors_page_test] PASS (${expected}) from ${outcome.origin}`);
} catch (error) {
  console.error(`[cors_page_test] FAIL: ${error.stack || error}`);
  process.exitCode = 1;
} finally {
  await browser.close();
}
