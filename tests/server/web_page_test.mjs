// SPDX-License-Identifier: Apache-2.0
// Headless-Chromium test of the `staticlm serve` chat page: streaming reply, stats line, Stop, New chat.
// Usage: node tests/server/web_page_test.mjs http://127.0.0.1:PORT SCREENSHOT_PATH
// Needs `npm install` in tests/server (playwright-core) and a system Chromium
// (/usr/bin/chromium, or set CHROMIUM=/path/to/chrome). Exits 0 on success, 1 on failure.
import { chromium } from 'playwright-core';

const STEP_TIMEOUT = 30_000;
const [baseUrl, screenshotPath] = process.argv.slice(2);
if (!baseUrl || !screenshotPath) {
  console.error('usage: node web_page_test.mjs http://127.0.0.1:PORT SCREENSHOT_PATH');
  process.exit(2);
}

let step = 'start';
const log = (msg) => console.log(`[web_page_test] ${msg}`);
function check(cond, msg) {
  if (!cond) throw new Error(msg);
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Text of the n-th (0-based) assistant bubble's content, '' when absent.
const replyText = (page, n) =>
  page.evaluate((i) => {
    const m = document.querySelectorAll('.message.assistant')[i];
    return m ? (m.querySelector('.content') || m).textContent : '';
  }, n);

async function main() {
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    args: ['--no-sandbox'],
  });
  const pageErrors = [];
  const chatRequests = [];
  let page;
  try {
    page = await browser.newPage({ viewport: { width: 1000, height: 800 } });
    page.setDefaultTimeout(STEP_TIMEOUT);
    page.on('pageerror', (e) => pageErrors.push(String(e)));
    page.on('console', (m) => { if (m.type() === 'error') log(`browser console error: ${m.text()}`); });
    page.on('request', (r) => {
      if (r.method() === 'POST' && r.url().includes('/v1/chat/completions')) chatRequests.push(r.postData());
    });

    step = 'load page';
    const res = await page.goto(baseUrl, { waitUntil: 'load', timeout: STEP_TIMEOUT });
    check(res && res.ok(), `GET ${baseUrl} returned ${res && res.status()}`);
    await page.waitForSelector('#input', { state: 'visible' });
    check((await page.textContent('#send')).trim() === 'Send', '#send should initially read "Send"');
    // Header shows the model once /v1/models answered.
    await page.waitForFunction(() => {
      const t = document.getElementById('model-info').textContent;
      return t && !t.startsWith('connecting');
    });
    log(`model info: ${await page.textContent('#model-info')}`);

    // Record every change of the first assistant bubble's text length (streaming evidence).
    await page.evaluate(() => {
      window.__lens = [];
      new MutationObserver(() => {
        const m = document.querySelector('.message.assistant .content');
        if (m) {
          const n = m.textContent.length;
          const l = window.__lens;
          if (l[l.length - 1] !== n) l.push(n);
        }
      }).observe(document.getElementById('messages'), { childList: true, subtree: true, characterData: true });
    });

    step = 'send first message (Enter)';
    const t0 = Date.now();
    await page.fill('#input', 'Hello! Please introduce yourself in two sentences.');
    await page.press('#input', 'Enter');
    await page.waitForSelector('.message.user');
    check((await page.textContent('.message.user')).includes('introduce yourself'), 'user bubble lacks the sent text');
    check((await page.inputValue('#input')) === '', 'input was not cleared after sending');

    step = 'first reply streams';
    await page.waitForFunction(() => {
      const m = document.querySelector('.message.assistant .content');
      return m && m.textContent.length > 0;
    });
    const polled = [(await replyText(page, 0)).length];
    // Poll from outside as well, until the stats line appears.
    for (;;) {
      if (await page.$('.message.assistant .stats')) break;
      const err = await page.$('.message.error');
      if (err) throw new Error(`page shows an error: ${await err.textContent()}`);
      check(Date.now() - t0 < 2 * STEP_TIMEOUT, 'reply did not finish (no .stats line) in time');
      polled.push((await replyText(page, 0)).length);
      await sleep(20);
    }
    const finalText = await replyText(page, 0);
    const lens = await page.evaluate(() => window.__lens);
    log(`first reply: ${finalText.length} chars; observed lengths ${JSON.stringify(lens.slice(0, 12))}${lens.length > 12 ? '…' : ''}`);
    check(finalText.trim().length > 0, 'assistant reply is empty');
    const grew = lens.filter((n) => n > 0 && n < finalText.length).length >= 1 ||
      polled.some((n) => n > 0 && n < finalText.length);
    check(grew, `reply did not stream: text lengths seen ${JSON.stringify(lens)} / polled ${JSON.stringify(polled.slice(0, 20))}`);
    check(lens.every((n, i) => i === 0 || n >= lens[i - 1]), `reply text shrank while streaming: ${JSON.stringify(lens)}`);

    step = 'stats line';
    const stats = (await page.textContent('.message.assistant .stats')).trim();
    log(`stats: ${stats}`);
    check(/^\d+ tokens? · \d+(\.\d+)? tok\/s/.test(stats), `unexpected stats line "${stats}"`);
    check((await page.textContent('#send')).trim() === 'Send', '#send did not return to "Send" after the reply');

    step = 'first request body';
    const req1 = JSON.parse(chatRequests[0] || '{}');
    check(req1.stream === true, 'request did not ask for stream: true');
    check(req1.stream_options && req1.stream_options.include_usage === true, 'request lacks stream_options.include_usage');
    check(Array.isArray(req1.messages) && req1.messages.at(-1).role === 'user', 'request messages should end with the user turn');
    check(req1.max_tokens === 256 && !('seed' in req1), 'the page sends its default max tokens (256) and no seed when empty');

    step = 'stop button';
    await page.click('#settings summary');
    // Long enough to be stopped mid-stream, short enough that every attempt's request fits the
    // context: each retry carries the earlier attempts' turns (a reply that ended early, at an
    // end-of-text token, stays in the history), and the server refuses (400) a request whose
    // prompt plus max_tokens passes the context. An eighth of it leaves room for the first turn
    // (256 tokens) and three attempts.
    const nCtx = await page.evaluate(async () => {
      try { return (await (await fetch('v1/models')).json()).data[0].meta.n_ctx || 0; } catch { return 0; }
    });
    const maxTokens = nCtx > 0 ? Math.max(16, Math.min(4000, Math.floor(nCtx / 8))) : 4000;
    await page.fill('#max-tokens', String(maxTokens));
    let stopped = false;
    for (let attempt = 1; attempt <= 3 && !stopped; attempt++) {
      const idx = (await page.$$('.message.assistant')).length;
      // The page clicks Stop itself at the reply's first text: the bundled model on a fast host
      // streams its whole reply (700-1700 tokens/s) in less time than a poll from here takes to
      // see it start and click, which made this step a race it lost on such hosts.
      await page.evaluate((i) => {
        window.__stopClicked = false;
        const observer = new MutationObserver(() => {
          const m = document.querySelectorAll('.message.assistant')[i];
          const send = document.getElementById('send');
          if (!m || m.querySelector('.content').textContent.length === 0) return;
          observer.disconnect();
          if (send.textContent.trim() === 'Stop' && !m.querySelector('.stats')) {
            window.__stopClicked = true;
            send.click();
          }
        });
        observer.observe(document.getElementById('messages'), { childList: true, subtree: true, characterData: true });
      }, idx);
      const tSend = Date.now();
      await page.fill('#input', 'Count from 1 to 1000, one number per line.');
      await page.click('#send');
      const outcome = await page.waitForFunction((i) => {
        if (document.querySelector('.message.error')) return 'error';
        const m = document.querySelectorAll('.message.assistant')[i];
        if (!m || document.getElementById('send').textContent.trim() !== 'Send') return false;
        return window.__stopClicked ? 'stopped' : 'finished';
      }, idx);
      const result = await outcome.jsonValue();
      if (result === 'error') {
        check(false, `the request of attempt ${attempt} failed: ${await page.textContent('.message.error')}`);
      }
      if (result === 'finished') {
        log(`attempt ${attempt}: reply finished before Stop could be clicked; retrying`);
        continue;
      }
      log(`Stop took effect ${Date.now() - tSend} ms after sending`);
      const len1 = (await replyText(page, idx)).length;
      check(len1 > 0, 'partial reply was removed after Stop');
      await sleep(1500);
      const len2 = (await replyText(page, idx)).length;
      check(len2 === len1, `reply kept growing after Stop (${len1} -> ${len2} chars)`);
      const stats2 = await page.evaluate((i) => {
        const s = document.querySelectorAll('.message.assistant')[i].querySelector('.stats');
        return s ? s.textContent : '';
      }, idx);
      log(`stopped reply: ${len2} chars; stats: ${stats2}`);
      check(!(await page.$('.message.error')), 'an error was shown after Stop');

      const req = JSON.parse(chatRequests.at(-1));
      check(req.max_tokens === maxTokens, `max_tokens not sent as ${maxTokens} (got ${req.max_tokens})`);
      const roles = req.messages.filter((m) => m.role !== 'system').map((m) => m.role);
      check(roles.length >= 3 && roles.every((r, i) => r === (i % 2 ? 'assistant' : 'user')),
        `second request should carry the full alternating history, got roles ${JSON.stringify(roles)}`);
      stopped = true;
    }
    check(stopped, 'could not stop a streaming reply in 3 attempts (the model kept finishing first)');

    step = 'page still usable after Stop';
    check((await page.$$('.message.error')).length === 0, 'unexpected error bubble');
    check(pageErrors.length === 0, `uncaught page errors: ${pageErrors.join('; ')}`);

    step = 'screenshot';
    await page.screenshot({ path: screenshotPath, fullPage: true });
    log(`screenshot written to ${screenshotPath}`);

    step = 'new chat';
    await page.click('#new-chat');
    check((await page.$$('.message')).length === 0, 'New chat did not clear the conversation');

    log('PASS');
  } catch (e) {
    if (page) {
      const failShot = screenshotPath.replace(/(\.png)?$/i, '.failure.png');
      await page.screenshot({ path: failShot, fullPage: true }).then(
        () => console.error(`[web_page_test] failure screenshot: ${failShot}`), () => {});
    }
    throw e;
  } finally {
    await browser.close();
  }
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(`[web_page_test] FAIL at step "${step}": ${e && e.message ? e.message : e}`);
    process.exit(1);
  },
);
