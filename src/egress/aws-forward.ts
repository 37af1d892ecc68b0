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
  if (!('rule' in result) && result.needsBody) {
    const body = await readWhole(req);
    if (body === undefined) return { rule: 'aws-sigv4-payload', reason: `the request has no X-Amz-Content-Sha256 and its body is larger than ${MAX_BUFFERED_BODY} bytes, the most the proxy reads to hash it` };
    result = await resign(request, onPort, body);
    source = Readable.from([body]);
  }
  if ('rule' in result) return result;
  return { target: result.target, headers: result.headers, stages: result.body ? [result.body()] : [], ...(source ? { source } : {}), resigned: result };
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
