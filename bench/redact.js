'use strict';
/*
 * Redaction throughput: 100 registered secrets (with all their encoded forms) over 64 KiB chunks
 * of mostly non-matching data, against a single RegExp alternation of the same escaped literals
 * (latin1), the naive baseline. Run after a build: `node bench/redact.js [MiB per run]`.
 */
const { Redactor, getEncodedForms } = require('../dist/redact/index.js');

const CHUNK = 64 * 1024;
const MIB_PER_RUN = Number(process.argv[2] ?? 64);

// Deterministic data, so runs are comparable.
let seed = 0x2545f491;
function random() {
  seed ^= seed << 13;
  seed ^= seed >>> 17;
  seed ^= seed << 5;
  return (seed >>> 0) / 0x100000000;
}
function pick(alphabet, length) {
  let text = '';
  for (let index = 0; index < length; index++) text += alphabet[Math.floor(random() * alphabet.length)];
  return text;
}

const ALNUM = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
// A mix like a real run's: API tokens, passwords with punctuation (these expand to the most
// spellings), JWTs, UUIDs and multi-line keys.
const KINDS = [
  () => `ghp_${pick(ALNUM, 36)}`,
  () => pick(`${ALNUM}/+`, 40),
  () => pick(`${ALNUM}!@#$%^&*()'" -_=:;,.?~<>`, 12 + Math.floor(random() * 20)),
  () => pick(`${ALNUM}!@#$%^&*()'" -_=:;,.?~<>`, 12 + Math.floor(random() * 20)),
  () => `eyJ${pick(`${ALNUM}-_`, 60)}.${pick(`${ALNUM}-_`, 40)}`,
  () => `${pick('0123456789abcdef', 8)}-${pick('0123456789abcdef', 4)}-4${pick('0123456789abcdef', 3)}-a${pick('0123456789abcdef', 3)}-${pick('0123456789abcdef', 12)}`,
  () => `-----BEGIN PRIVATE KEY-----\n${pick(`${ALNUM}/+`, 64)}\n${pick(`${ALNUM}/+`, 40)}=\n-----END PRIVATE KEY-----\n`,
];
const secrets = Array.from({ length: 100 }, (_, index) => KINDS[index % KINDS.length]());

const WORDS = 'the of and to in is that for it as was with be by on not he this are or his from at which but have an they you were her she there one all we their has been if more when will would who so no time info debug warn error GET POST 200 404 /usr/lib/node_modules request response build step npm install compiling done'.split(' ');
function logText(size) {
  const lines = [];
  let length = 0;
  while (length < size) {
    const words = Array.from({ length: 4 + Math.floor(random() * 12) }, () => WORDS[Math.floor(random() * WORDS.length)]);
    const line = `2024-05-0${1 + Math.floor(random() * 9)}T12:${pick('012345', 1)}${pick('0123456789', 1)}:07.${pick('0123456789', 3)}Z [${pick('0123456789abcdef', 8)}] ${words.join(' ')} id=${pick(ALNUM, 10)}\n`;
    lines.push(line);
    length += line.length;
  }
  return Buffer.from(lines.join('')).subarray(0, size);
}

const corpora = {
  'log text': logText(4 * 1024 * 1024),
  'random bytes': Buffer.from(Array.from({ length: 4 * 1024 * 1024 }, () => Math.floor(random() * 256))),
  'base64 text': Buffer.from(Buffer.from(Array.from({ length: 3 * 1024 * 1024 }, () => Math.floor(random() * 256))).toString('base64')).subarray(0, 4 * 1024 * 1024),
};
// Same log text with one secret (in a random registered spelling) every ~64 KiB.
const withHits = Buffer.from(corpora['log text']);
for (let offset = 1000; offset + 400 < withHits.length; offset += CHUNK) {
  const forms = getEncodedForms(secrets[Math.floor(random() * secrets.length)], { minLength: 8, encodings: true });
  withHits.write(forms[Math.floor(random() * forms.length)].text, offset, 'utf8');
}
corpora['log text, 1 secret per chunk'] = withHits;

const redactor = new Redactor();
secrets.forEach((secret, index) => redactor.add(secret, `secret:s${index}`));

function chunksOf(corpus) {
  const chunks = [];
  for (let offset = 0; offset + CHUNK <= corpus.length; offset += CHUNK) chunks.push(corpus.subarray(offset, offset + CHUNK));
  return chunks;
}

/**
 * MB/s (10^6 bytes), median of 5 runs of about `mib` MiB each, after a warm-up. Rates use the
 * process's CPU time, so that other load on the machine does not count against the code measured
 * (GC helper threads do count, which only lowers the figure).
 */
function measure(chunks, run, mib) {
  const rounds = Math.max(1, Math.round((mib * 1024 * 1024) / (chunks.length * CHUNK)));
  run(chunks);
  const rates = [];
  for (let sample = 0; sample < 5; sample++) {
    const started = process.cpuUsage();
    for (let round = 0; round < rounds; round++) run(chunks);
    const { user, system } = process.cpuUsage(started);
    rates.push((rounds * chunks.length * CHUNK) / ((user + system) / 1e6) / 1e6);
  }
  return rates.sort((a, b) => a - b)[2];
}

function runRedactor(chunks) {
  const stream = redactor.createStream();
  let bytes = 0;
  for (const chunk of chunks) bytes += stream.push(chunk).length;
  bytes += stream.flush().length;
  return bytes;
}

const literals = [];
for (const secret of secrets) {
  for (const { text } of getEncodedForms(secret, { minLength: 8, encodings: true })) {
    literals.push(Buffer.from(text, 'utf8').toString('latin1'));
  }
}
const unique = [...new Set(literals)];
const escape = (text) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
function alternationOf(texts) {
  const pattern = new RegExp(texts.map(escape).join('|'), 'g');
  return (chunks) => {
    let found = 0;
    for (const chunk of chunks) {
      const text = chunk.toString('latin1');
      pattern.lastIndex = 0;
      while (pattern.exec(text) !== null) found++;
    }
    return found;
  };
}
const runRegExp = alternationOf(unique);
// V8 runs an alternation of up to roughly 12,000 characters of literals as fast native code and
// falls off a cliff above that; a subset that fits shows the RegExp at its best (with far fewer
// patterns than the redactor handles).
const fitting = [];
for (let index = 0, size = 0; index < unique.length && size + unique[index].length <= 12000; index++) {
  fitting.push(unique[index]);
  size += unique[index].length + 1;
}
const runSmallRegExp = alternationOf(fitting);

console.log(`node ${process.version}, ${require('os').cpus().length} CPUs`);
console.log(`${secrets.length} secrets, ${redactor.patternCount} patterns, ${CHUNK / 1024} KiB chunks, ~${MIB_PER_RUN} MiB per measurement`);
for (const [name, corpus] of Object.entries(corpora)) {
  const chunks = chunksOf(corpus);
  const ours = measure(chunks, runRedactor, MIB_PER_RUN);
  const baseline = measure(chunks, runRegExp, 4);
  const small = measure(chunks, runSmallRegExp, 16);
  console.log(
    `${name.padEnd(30)} redactor ${ours.toFixed(0).padStart(5)} MB/s | RegExp (all ${unique.length}) ${baseline.toFixed(1).padStart(5)} MB/s, ratio ${(ours / baseline).toFixed(0)}x | RegExp (${fitting.length}) ${small.toFixed(0).padStart(4)} MB/s, ratio ${(ours / small).toFixed(1)}x`,
  );
}
