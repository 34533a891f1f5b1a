// Plumbing shared by the gallery's Node.js sinks (core modules only: these sinks are written outside
// restproof, the way a user writes theirs).
'use strict';
const fs = require('fs');
const path = require('path');
const http = require('http');

function call(method, url, body, headers) {
  return new Promise((resolve, reject) => {
    const request = http.request(url, { method, headers: headers || {}, timeout: 10000 }, (response) => {
      const chunks = [];
      response.on('data', (chunk) => chunks.push(chunk));
      response.on('end', () => {
        let document = null;
        try { document = JSON.parse(Buffer.concat(chunks).toString('utf8') || 'null'); } catch (error) { document = null; }
        resolve({ status: response.statusCode, document, headers: response.headers });
      });
      response.on('error', reject);
    });
    request.on('timeout', () => request.destroy(new Error('timeout')));
    request.on('error', reject);
    request.end(body);
  });
}

function loadBundle(directory) {
  const bundle = JSON.parse(fs.readFileSync(path.join(directory, 'bundle.json'), 'utf8'));
  return { bundle, children: bundle.children.map((child) => [child, fs.readFileSync(path.join(directory, 'bodies', child.body_file))]) };
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function report(units) {
  process.stdout.write(JSON.stringify({ units }) + '\n');
  process.exit(units.every((unit) => unit.status === 'completed') ? 0 : 4);
}

module.exports = { call, loadBundle, sleep, report };
