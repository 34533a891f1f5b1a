#!/usr/bin/env node
// WRONG on purpose (gallery): uploads each async job, and on any error uploads it again under a NEW
// file name and a new multipart boundary (a task that names its file after its attempt). The
// receiver's duplicate key is the file name, so the retry is a new job: after a lost response the
// receiver applies the interval twice. It polls its jobs properly: only the rename is wrong.
// Usage: renamed_upload.js BUNDLE_DIR RECEIVER_URL
'use strict';
const crypto = require('crypto');
const { call, loadBundle, sleep, report } = require('./gallery_common.js');

const [bundleDir, base] = process.argv.slice(2);

function renamed(child, body) {
  const boundary = 'b' + crypto.randomBytes(12).toString('hex');
  const name = 'upload-' + crypto.randomBytes(8).toString('hex');
  const oldBoundary = /boundary=([^;]+)/.exec(child.content_type)[1];
  const text = body.toString('latin1').split(oldBoundary).join(boundary).split(child.receiver_mutation_key).join(name);
  return [Buffer.from(text, 'latin1'), `multipart/form-data; boundary=${boundary}`];
}

async function poll(location) {
  for (let attempt = 0; attempt < 120; attempt += 1) {
    try {
      const answer = await call('GET', base + location);
      const phase = answer.document && answer.document.phase;
      if (phase === 'complete') return 'completed';
      if (['incomplete', 'error', 'cancelled'].includes(phase)) return 'failed';
    } catch (error) { /* poll again */ }
    await sleep(500);
  }
  return 'unknown';
}

async function deliver(child, body) {
  for (let attempt = 0; attempt < 4; attempt += 1) {
    const [bytes, contentType] = renamed(child, body);
    let answer;
    try {
      answer = await call('POST', base + child.path_and_query, bytes, { 'Content-Type': contentType,
        'Content-Length': String(bytes.length) });
    } catch (error) {
      await sleep(200);
      continue;
    }
    if (answer.status === 202 && answer.document && answer.document.job_id) {
      return poll(`/mock/v1/dataset-jobs/${answer.document.job_id}`);
    }
    await sleep(200);
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
