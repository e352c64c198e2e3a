// SPDX-License-Identifier: Apache-2.0
// staticlm serve: built-in chat page (logic); streams /v1/chat/completions over SSE, no dependencies.
const $ = (id) => document.getElementById(id);
const els = {
  messages: $('messages'), input: $('input'), send: $('send'), form: $('composer'),
  newChat: $('new-chat'), system: $('system'), modelInfo: $('model-info'),
  auth: $('auth'), apiKey: $('api-key'),
  temperature: $('temperature'), topP: $('top-p'), topK: $('top-k'),
  minP: $('min-p'), maxTokens: $('max-tokens'), seed: $('seed'),
};
const KEY_STORE = 'staticlm.apiKey';
let history = []; // [{role, content}] of finished turns, without the system message
let controller = null; // AbortController while a reply streams
let chatId = 0; // bumped by "New chat" so a reply still in flight is discarded

els.apiKey.value = localStorage.getItem(KEY_STORE) || '';
if (els.apiKey.value) els.auth.hidden = false;

function headers() {
  const h = { 'Content-Type': 'application/json' };
  const key = els.apiKey.value.trim();
  if (key) h.Authorization = `Bearer ${key}`;
  return h;
}

function addMessage(role, text) {
  const div = document.createElement('div');
  div.className = `message ${role}`;
  const content = document.createElement('div');
  content.className = 'content';
  content.textContent = text; // never innerHTML: model output is plain text
  div.append(content);
  const stick = nearBottom();
  els.messages.append(div);
  if (stick) scrollDown();
  return div;
}

function showError(message) {
  addMessage('error', message);
  scrollDown();
}

function nearBottom() {
  const m = els.messages;
  return m.scrollHeight - m.scrollTop - m.clientHeight < 80;
}
function scrollDown() { els.messages.scrollTop = els.messages.scrollHeight; }

function setStreaming(on) {
  els.send.textContent = on ? 'Stop' : 'Send';
  els.send.classList.toggle('stop', on);
}

function num(input, parse) {
  const v = input.value.trim();
  if (v === '') return undefined;
  const n = parse(v);
  return Number.isFinite(n) ? n : undefined;
}

function buildRequest() {
  const messages = [];
  const system = els.system.value.trim();
  if (system) messages.push({ role: 'system', content: system });
  messages.push(...history);
  const body = {
    messages, stream: true, stream_options: { include_usage: true },
    temperature: num(els.temperature, parseFloat),
    top_p: num(els.topP, parseFloat),
    top_k: num(els.topK, (v) => parseInt(v, 10)),
    min_p: num(els.minP, parseFloat),
    max_tokens: num(els.maxTokens, (v) => parseInt(v, 10)),
    seed: num(els.seed, (v) => parseInt(v, 10)),
  };
  return JSON.stringify(body); // undefined fields are omitted
}

async function errorFromResponse(res) {
  let text = '';
  try { text = await res.text(); } catch { /* ignore */ }
  try {
    const j = JSON.parse(text);
    if (j && j.error) return j.error.message || JSON.stringify(j.error);
  } catch { /* not JSON */ }
  return text.trim() || res.statusText || 'request failed';
}

// Reads an SSE body and calls onData(payload) for each event's data.
async function readSSE(body, onData) {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buf = '';
  let data = [];
  const flushLine = (line) => {
    if (line === '') {
      if (data.length) { const d = data.join('\n'); data = []; return onData(d); }
      return false;
    }
    if (line.startsWith(':')) return false; // comment / keep-alive
    const i = line.indexOf(':');
    const field = i < 0 ? line : line.slice(0, i);
    let value = i < 0 ? '' : line.slice(i + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'data') data.push(value);
    return false;
  };
  try {
    for (;;) {
      const { value, done } = await reader.read();
      buf += decoder.decode(value || new Uint8Array(), { stream: !done });
      let nl;
      while ((nl = buf.search(/\r\n|\r|\n/)) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + (buf[nl] === '\r' && buf[nl + 1] === '\n' ? 2 : 1));
        if (flushLine(line)) { reader.cancel().catch(() => {}); return; }
      }
      if (done) { flushLine(buf); flushLine(''); return; }
    }
  } catch (e) {
    reader.cancel().catch(() => {});
    throw e;
  }
}

async function send() {
  const text = els.input.value;
  if (!text.trim() || controller) return;
  els.input.value = '';
  const userDiv = addMessage('user', text);
  history.push({ role: 'user', content: text });
  const bot = addMessage('assistant', '');
  bot.classList.add('pending');
  const content = bot.querySelector('.content');
  scrollDown();

  const myChat = chatId;
  controller = new AbortController();
  setStreaming(true);
  let reply = '';
  let chunks = 0, firstAt = 0, lastAt = 0, finish = null, usage = null, timings = null;
  let stopped = false, error = null;
  try {
    const res = await fetch('v1/chat/completions', {
      method: 'POST', headers: headers(), body: buildRequest(), signal: controller.signal,
    });
    if (!res.ok) {
      if (res.status === 401) els.auth.hidden = false;
      throw new Error(`${res.status}: ${await errorFromResponse(res)}`);
    }
    await readSSE(res.body, (data) => {
      if (data === '[DONE]') return true;
      let j;
      try { j = JSON.parse(data); } catch { return false; }
      if (j.error) throw new Error(j.error.message || JSON.stringify(j.error));
      for (const c of j.choices || []) {
        const piece = c.delta && c.delta.content;
        if (piece) {
          const now = performance.now();
          if (!firstAt) firstAt = now;
          lastAt = now;
          chunks++;
          const stick = nearBottom();
          reply += piece;
          content.textContent = reply;
          if (stick) scrollDown();
        }
        if (c.finish_reason) finish = c.finish_reason;
      }
      if (j.usage) usage = j.usage;
      if (j.timings) timings = j.timings;
      return false;
    });
  } catch (e) {
    if (e.name === 'AbortError') stopped = true;
    else error = e;
  } finally {
    controller = null;
    setStreaming(false);
    bot.classList.remove('pending');
  }

  if (myChat !== chatId) return; // "New chat" was pressed meanwhile
  if (!reply && (error || stopped)) {
    // Nothing came back: drop the turn so the user can retry (the text goes back to the input).
    history.pop();
    bot.remove();
    userDiv.classList.add('failed');
    if (!els.input.value) els.input.value = text;
    if (!error) return;
    if (/^401/.test(error.message)) {
      showError(`${error.message} — enter an API key above and send again.`);
      els.apiKey.focus();
    } else {
      showError(`Error: ${error.message}`);
    }
    return;
  }
  history.push({ role: 'assistant', content: reply });
  const n = (usage && usage.completion_tokens) || chunks;
  let rate = timings && timings.predicted_per_second;
  if (!(rate > 0) && chunks > 1 && lastAt > firstAt) rate = ((chunks - 1) * 1000) / (lastAt - firstAt);
  const parts = [`${n} token${n === 1 ? '' : 's'}`];
  if (rate > 0) parts.push(`${rate.toFixed(1)} tok/s`);
  if (finish === 'length') parts.push('finish: length');
  if (stopped) parts.push('stopped');
  const stats = document.createElement('div');
  stats.className = 'stats';
  stats.textContent = parts.join(' · ');
  const stick = nearBottom();
  bot.append(stats);
  if (error) showError(`Error: ${error.message}`);
  if (stick) scrollDown();
}

function newChat() {
  chatId++;
  if (controller) controller.abort();
  history = [];
  els.messages.replaceChildren();
  els.input.focus();
}

async function loadModel() {
  try {
    const res = await fetch('v1/models', { headers: headers() });
    if (res.status === 401) {
      els.auth.hidden = false;
      els.modelInfo.textContent = 'API key required';
      return;
    }
    if (!res.ok) throw new Error(`${res.status}: ${await errorFromResponse(res)}`);
    const m = ((await res.json()).data || [])[0];
    if (!m) { els.modelInfo.textContent = 'no model'; return; }
    const ctx = m.meta && m.meta.n_ctx;
    els.modelInfo.textContent = ctx ? `${m.id} · ${ctx} ctx` : m.id;
    els.modelInfo.title = m.id;
    document.title = `${m.id} — staticlm`;
  } catch (e) {
    els.modelInfo.textContent = `model info unavailable (${e.message})`;
  }
}

els.form.addEventListener('submit', (e) => {
  e.preventDefault();
  if (controller) controller.abort();
  else send();
});
els.input.addEventListener('keydown', (e) => {
  if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
    e.preventDefault();
    if (!controller) send();
  }
});
els.newChat.addEventListener('click', newChat);
function storeKey() {
  const key = els.apiKey.value.trim();
  if (key) localStorage.setItem(KEY_STORE, key);
  else localStorage.removeItem(KEY_STORE);
}
els.apiKey.addEventListener('change', storeKey);
els.auth.addEventListener('submit', (e) => {
  e.preventDefault();
  storeKey();
  loadModel();
  els.input.focus();
});

loadModel();
