/*
 * The proxy's AWS step, between reading a request and placing its sentinels (forward.ts): a
 * request to a host of a `delivery: aws-sigv4` binding that carries a SigV4 signature is checked
 * against the run's placeholder pair and signed again with the real one (sigv4.ts), or refused.
 * A request there without a signature goes on as any other (its sentinels checked by placement:
 * a placeholder anywhere but a signature is refused). Over plain HTTP nothing is signed: the real
 * signature would cross the network readable.
 *
 * A request with no payload hash header (STS and most query APIs) is signed over its body's
 * hash: the body is read whole first (at most MAX_BUFFERED_BODY) and sent on from memory.
 */
import type { IncomingMessage } from 'node:http';
import { Readable, type Transform } from 'node:stream';
import { matchesHost } from './hosts';
import type { BoundInjection } from './plan';
import type { Refusal } from './reading';
import { SwapStream } from './inject';
import { DEFAULT_INJECT_PORT } from './rules';
import { getAwsSignings, isSigned, MAX_BUFFERED_BODY, resign, type AwsSigning, type Resigned } from './sigv4';

export interface AwsStep {
  readonly target: string;
  readonly headers: string[];
  /** The body's check and re-signing (before the sentinel scan). */
  readonly stages: Transform[];
  /** The body to send instead of the request's own stream (it was read whole). */
  readonly source?: Readable;
  readonly resigned: Resigned;
}

const signingsOf = new WeakMap<readonly BoundInjection[], AwsSigning[]>();

export async function prepareAws(
  injections: readonly BoundInjection[],
  request: { method: string; target: string; headers: readonly string[]; host: string; port: number; tls: boolean },
  req: IncomingMessage,
): Promise<AwsStep | Refusal | undefined> {
  let signings = signingsOf.get(injections);
  if (!signings) signingsOf.set(injections, signings = getAwsSignings(injections));
  if (signings.length === 0) return undefined;
  const bound = signings.filter((s) => injections.some((i) => i.ref === s.ref && i.binding.hosts.some((p) => matchesHost(p, request.host, request.port))));
  if (bound.length === 0 || !isSigned(request)) return undefined;
  if (!request.tls) {
    return { rule: 'aws-sigv4-tls', reason: 'a SigV4-signed request is signed again over HTTPS only; this one is plain HTTP' };
  }
  const onPort = bound.filter((s) => injections.some((i) => i.ref === s.ref && i.binding.hosts.some((p) => matchesHost(p, request.host, request.port) && (p.port ?? DEFAULT_INJECT_PORT) === request.port)));
  if (onPort.length === 0) return { rule: 'aws-sigv4-port', reason: `AWS requests are signed again on the bound hosts' port only, not ${request.port}` };
  let result = await resign(request, onPort);
  let source: Readable | undefined;
  let bodyRead: Buffer | undefined;
  let stsBody: Buffer | undefined;
  if (!('rule' in result) && result.needsBody) {
    const body = await readWhole(req);
    if (body === undefined) return { rule: 'aws-sigv4-payload', reason: `the request has no X-Amz-Content-Sha256 and its body is larger than ${MAX_BUFFERED_BODY} bytes, the most the proxy reads to hash it` };
    result = await resign(request, onPort, body);
    source = Readable.from([body]);
    bodyRead = body;
  }
  if ('rule' in result) return result;
  if (result.service === 'sts') {
    // The body is read whole here even when it came with its hash (so it would stream unread).
    if (!source) {
      const body = await readWhole(req);
      if (body === undefined) return { rule: 'aws-sigv4-sts', reason: `an STS request body larger than ${MAX_BUFFERED_BODY} bytes is not signed again` };
      source = Readable.from([body]);
      stsBody = body;
    }
    const payload = String(req.headers['x-amz-content-sha256'] ?? '');
    if (payload.startsWith('STREAMING-')) return { rule: 'aws-sigv4-sts', reason: `an STS request with the streaming payload \`${payload.slice(0, 64)}\` is not signed again: its body is framed, not the form the proxy reads its action from` };
    const refused = checkStsAction(request, stsBody ?? bodyRead, req.headers['content-encoding']);
    if (refused) return refused;
  }
  return { target: result.target, headers: result.headers, stages: result.body ? [result.body()] : [], ...(source ? { source } : {}), resigned: result };
}

/*
 * STS trades a key for another: GetSessionToken answers any IAM user's key with a new key pair
 * and session token valid for up to 36 hours from anywhere, and no IAM policy can deny it (an
 * authentication call); GetFederationToken and AssumeRole* do the same with a permission. Signed
 * again for a run, the new key would reach the run in the response, unmasked (a new value), and
 * leave with it: the key the sandbox never held, by another name. So an STS request is signed
 * again only for the calls that hand out no credential, named in its query, its form body or its
 * X-Amz-Target (every `Action` in any of them, compared without case); one that names none,
 * whose body is encoded, or whose payload is a streaming (framed) one, is refused.
 */
const STS_ACTIONS = new Set(['getcalleridentity', 'getaccesskeyinfo', 'decodeauthorizationmessage']);

function checkStsAction(request: { target: string; headers: readonly string[] }, body: Buffer | undefined, encoding: string | string[] | undefined): Refusal | undefined {
  const refuse = (why: string): Refusal => ({ rule: 'aws-sigv4-sts', reason: `${why}; STS requests are signed again for GetCallerIdentity, GetAccessKeyInfo and DecodeAuthorizationMessage only, never for a call that hands out credentials (GetSessionToken, GetFederationToken, AssumeRole...), which would reach the run unmasked` });
  if (encoding !== undefined && String(encoding).trim().toLowerCase() !== 'identity' && String(encoding).trim() !== '') return refuse('the STS request body is encoded');
  const actions: string[] = [];
  const collect = (text: string): void => {
    for (const [name, value] of new URLSearchParams(text)) if (name.toLowerCase() === 'action') actions.push(value);
  };
  const q = request.target.indexOf('?');
  if (q !== -1) collect(request.target.slice(q + 1));
  if (body && body.length > 0) collect(body.toString('utf8'));
  for (let i = 0; i + 1 < request.headers.length; i += 2) {
    if (request.headers[i].toLowerCase() === 'x-amz-target') actions.push(request.headers[i + 1].slice(request.headers[i + 1].lastIndexOf('.') + 1));
  }
  if (actions.length === 0) return refuse('the STS request names no Action the proxy can read');
  const other = actions.find((action) => !STS_ACTIONS.has(action.trim().toLowerCase()));
  return other === undefined ? undefined : refuse(`the STS action \`${other.slice(0, 64).replace(/[^\x21-\x7e]/g, '?')}\` is not signed again`);
}

/*
 * The signatures made for one request, masked in its response. Not by the run's masker: one built
 * per request cost some 2.5 ms (bench/egress-aws.js), ten times the re-signing itself. A signature
 * is 64 lower-case hex characters and is echoed as it was sent, so a plain swap for a mark of the
 * same length does (SwapStream holds back what could begin one across chunks).
 */
const MASK = Buffer.from('[REDACTED:aws-signature]'.padEnd(64, '*'), 'latin1');

export class SignatureMask extends SwapStream {
  constructor(signatures: readonly string[]) {
    super(signatures.map((signature) => ({ ref: 'aws-signature', from: Buffer.from(signature, 'latin1'), to: MASK })));
  }
}

export function maskSignatureHeaders(raw: readonly string[], signatures: readonly string[]): string[] {
  return raw.map((value) => signatures.reduce((text, signature) => text.split(signature).join(MASK.toString('latin1')), value));
}

function readWhole(req: IncomingMessage): Promise<Buffer | undefined> {
  const length = Number(req.headers['content-length'] ?? 0);
  if (req.headers['transfer-encoding'] === undefined && length === 0) return Promise.resolve(Buffer.alloc(0));
  if (length > MAX_BUFFERED_BODY) return Promise.resolve(undefined);
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BUFFERED_BODY) {
        req.removeAllListeners('data');
        req.resume();
        resolve(undefined);
        return;
      }
      chunks.push(chunk);
    });
    req.once('end', () => resolve(Buffer.concat(chunks)));
    req.once('error', reject);
  });
}
