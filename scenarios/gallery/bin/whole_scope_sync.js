#!/usr/bin/env node
// A correct sink written outside restproof, in Node.js: ONE request for the whole scope (the rows of
// the exported dataset bundle, joined), a deterministic Idempotency-Key for the scope, same-key
// retries only, and a read-only summary check when the answer is not a plain success.
// Usage: whole_scope_sync.js BUNDLE_DIR SCOPE_FROM SCOPE_TO RECEIVER_URL
'use strict';
const fs = require('fs');
const path = require('path');
const crypto = require('crypto');
const { call, sleep } = require('./gallery_common.js');

const [bundleDir, scopeFrom, scopeTo, base] = process.argv.slice(2);
const bundle = JSON.parse(fs.readFileSync(path.join(bundleDir, 'bundle.json'), 'utf8'));
const rows = bundle.children.flatMap((child) =>
  JSON.parse(fs.readFileSync(path.join(bundleDir, 'bodies', child.body_file), 'utf8')));
const resource = bundle.resource;
const key = crypto.createHash('sha256').update(`whole|${resource}|${scopeFrom}|${scopeTo}`).digest('hex');

async function held() {
  for (let attempt = 0; attempt < 6; attempt += 1) {
    try {
      const answer = await call('GET', `${base}/mock/v1/resources/${resource}/summary?range_start=${scopeFrom}&range_end=${scopeTo}`);
      if (answer.status === 200 && answer.document) return answer.document.row_count;
    } catch (error) { /* try again */ }
    await sleep(500);
  }
  return null;
}

async function deliver() {
  const body = Buffer.from(JSON.stringify(rows), 'utf8');
  const url = `${base}/mock/v1/resources/${resource}/batches?range_start=${scopeFrom}&range_end=${scopeTo}`;
  for (let attempt = 0; attempt < 6; attempt += 1) {
    let answer;
    try {
      answer = await call('POST', url, body, { 'Content-Type': 'application/json', 'Idempotency-Key': key,
        'Content-Length': String(body.length) });
    } catch (error) {
      await sleep(300 * (attempt + 1));  // the same key again: the receiver deduplicates it
      continue;
    }
    const doc = answer.document || {};
    if ((answer.status === 200 || answer.status === 201) && !doc.rejected_rows && doc.accepted_rows === rows.length) {
      return 'completed';
    }
    if ((answer.status === 200 || answer.status === 201) && doc.rejected_rows) return 'partial';
    if (answer.status === 409 && doc.receipt_id) break;
    if ([409, 413, 429, 500, 502, 503, 504].includes(answer.status)) {
      await sleep(1000);
      continue;
    }
    if (answer.status !== 200 && answer.status !== 201) return 'failed';
    break;
  }
  return (await held()) === rows.length ? 'completed' : 'unknown';
}

deliver().then((status) => {
  process.stdout.write(JSON.stringify({ units: [{ scope_from: scopeFrom, scope_to: scopeTo, status }] }) + '\n');
  process.exit(status === 'completed' ? 0 : 4);
});
