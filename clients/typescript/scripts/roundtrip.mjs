// The round-trip time of a left_click through the driver (toolResult: the command, then the
// browser_state report) beside the same click sent directly (POST /commands computer left_click).
// Needs a server with a connected browser: BO_URL, BO_TOKEN, BO_FIXTURES as the e2e test sets them
// (or any page: BO_PAGE). Prints the medians of ROUNDS (default 40) alternating rounds.
import { BrowserOperatorToolset } from 'browser-operator';

const { BO_URL: url, BO_TOKEN: token } = process.env;
const page = process.env.BO_PAGE ?? `${process.env.BO_FIXTURES}page.html`;
const rounds = Number(process.env.ROUNDS ?? 40);
const browser = new BrowserOperatorToolset({ url, token });
let n = 0;
const call = (name, input) => browser.toolResult({ type: 'tool_use', id: `t${++n}`, toolset_name: 'browser', name, input });
const first = await call('navigate', { url: page });
if (first.is_error) throw new Error(JSON.stringify(first.content));
const tabId = Number(first.content.find((b) => b.type === 'browser_state').tabs.find((t) => t.active).tab_id);
const target = { type: 'coordinate', x: 80, y: 40 };
async function direct() {
  const r = await fetch(`${url}/commands`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ tool: 'computer', args: { action: 'left_click', tabId, coordinate: [80, 40] } }),
  });
  const body = await r.json();
  if (body.error) throw new Error(body.error);
}
const times = { driver: [], direct: [] };
for (let i = 0; i < rounds + 3; i++) {
  let t = performance.now();
  const r = await call('left_click', { target });
  if (r.is_error) throw new Error(JSON.stringify(r.content));
  const d = performance.now() - t;
  t = performance.now();
  await direct();
  const e = performance.now() - t;
  if (i >= 3) (times.driver.push(d), times.direct.push(e)); // the first rounds warm up
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
console.log(
  `left_click, median of ${rounds}: through the driver ${median(times.driver).toFixed(2)} ms, ` +
    `direct command ${median(times.direct).toFixed(2)} ms`,
);
