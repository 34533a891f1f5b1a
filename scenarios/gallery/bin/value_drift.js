#!/usr/bin/env node
// WRONG on purpose (gallery): delivers every row of the interval, once, with its own fence key, but
// "normalises" each reading on the way (adds 1): every row count is right and every value is wrong.
// Usage: value_drift.js BUNDLE_DIR RECEIVER_URL
'use strict';
const crypto = require('crypto');
const { call, loadBundle, sleep, report } = require('./gallery_common.js');

const [bundleDir, base] = process.argv.slice(2);

async function deliver(child, body) {
  const rows = JSON.parse(body.toString('utf8')).map((row) => ({ ...row, reading: String(Number(row.reading) + 1) }));
  const bytes = Buffer.from(JSON.stringify(rows), 'utf8');
  const key = crypto.createHash('sha256').update('drift|' + child.path_and_query).digest('hex');
  for (let attempt = 0; attempt < 6; attempt += 1) {
    try {
      const answer = await call('POST', base + child.path_and_query, bytes, { 'Content-Type': 'application/json',
        'Idempotency-Key': key, 'Content-Length': String(bytes.length) });
      if (answer.status >= 200 && answer.status < 300) return 'completed';
      if (answer.status === 409 && answer.document && answer.document.receipt_id) return 'completed';
    } catch (error) { /* the same key again */ }
    await sleep(300);
  }
  return 'failed';
}

(async () => {
  const { children } = loadBundle(bundleDir);
  const units = [];
  for (const [child, body] of children) {
    units.push({ scope_from: child.scope_from, scope_to: child.scope_to, status: await deliver(child, body) });
  }
  report(units);
})();
