/*
 * Host patterns: the one syntax for `sandbox.network.allow/deny` and `secrets.bind[].hosts`.
 *
 *   example.com         exactly that name (any port)
 *   *.example.com       any subdomain of example.com, not example.com itself
 *   *                   any name (never an IP literal: those must be allowed one by one)
 *   192.0.2.10          an IPv4 literal; [2001:db8::1] an IPv6 literal
 *   ...:443             any of the above restricted to one port
 *
 * A pattern's host is read by the same parser as every request's (authority.ts): case folded, one
 * trailing dot dropped, IDNA-mapped, and an IPv4 spelling such as `0xcb00710a` is the address
 * `203.0.113.10`, so it is an IP literal here as it is in a request. Everything else (a scheme,
 * a path, `api.*.com`, `*foo.com`, empty labels) is a load-time error: a pattern that silently
 * matched nothing, or more than meant, would be a policy that says one thing and does another.
 */
import { isIP } from 'node:net';
import { describeValue, ExecgateError } from '../errors';
import { canonicalHost } from './authority';

export type HostPatternKind = 'any' | 'name' | 'wildcard' | 'ip';

export interface HostPattern {
  /** The pattern as written in the policy (used in audit records as the rule). */
  readonly text: string;
  readonly kind: HostPatternKind;
  /** Lower-cased name, the suffix after `*.` for wildcards, or the canonical IP literal. */
  readonly host: string;
  /** A single port, or undefined for any port. */
  readonly port: number | undefined;
}

const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;

/** Parse one pattern; throws EXECGATE_ERR_EGRESS_HOST_PATTERN_INVALID with the reason. */
export function parseHostPattern(input: string, where = 'a host pattern'): HostPattern {
  // A policy's schema holds a non-empty string; spaces alone are no host.
  if (input.trim() === '') {
    throw invalid(where, `Expected ${where} to be a non-empty string, got ${describeValue(input)}.`, input);
  }
  const text = input.trim();
  if (/[/@?#\s]/.test(text) || text.includes('://')) {
    throw invalid(where, `${where} \`${text}\` must be a bare host such as \`api.github.com\` or \`*.npmjs.org:443\` (no scheme, user, path or spaces).`, text);
  }
  const { hostPart, port } = splitPort(text, where);
  if (hostPart.startsWith('[')) {
    const inner = hostPart.slice(1, -1);
    if (!hostPart.endsWith(']') || isIP(inner) !== 6) {
      throw invalid(where, `${where} \`${text}\` has brackets but no valid IPv6 address inside.`, text);
    }
    return ipPattern(text, canonicalHost(hostPart)!, port);
  }
  if (isIP(hostPart) === 6) {
    throw invalid(where, `${where} \`${text}\`: write an IPv6 literal in brackets, for example \`[${hostPart}]\`.`, text);
  }
  if (hostPart === '*') return freeze({ text, kind: 'any', host: '*', port });
  let kind: HostPatternKind = 'name';
  let written = hostPart;
  if (written.startsWith('*.')) {
    kind = 'wildcard';
    written = written.slice(2);
  }
  const canonical = written.includes('*') ? undefined : canonicalHost(written);
  if (canonical !== undefined && isIP(canonical) !== 0) {
    if (kind === 'wildcard') throw invalid(where, `${where} \`${text}\`: a \`*.\` wildcard covers names, not addresses (\`${written}\` is the address ${canonical}).`, text);
    return ipPattern(text, canonical, port);
  }
  const name = canonical ?? written.toLowerCase();
  const labels = name.split('.');
  const bad = labels.find((label) => !LABEL.test(label));
  if (canonical === undefined || bad !== undefined || name.length > 253) {
    const why = written.includes('*')
      ? 'a `*` is allowed only as the whole first label (`*.example.com`) or as the whole pattern'
      : 'each label must be 1-63 letters, digits or inner hyphens, and the name at most 253 characters';
    throw invalid(where, `${where} \`${text}\` is not a valid host pattern: ${why}.`, text);
  }
  if (kind === 'wildcard' && labels.length < 2) {
    throw invalid(where, `${where} \`${text}\` would match every name under a top-level domain; name a domain (\`*.example.com\`) or use \`*\`.`, text);
  }
  return freeze({ text, kind, host: name, port });
}

function ipPattern(text: string, host: string, port: number | undefined): HostPattern {
  return freeze({ text, kind: 'ip', host, port });
}

export function parseHostPatterns(input: readonly string[] | undefined, where: string): readonly HostPattern[] {
  if (input === undefined) return Object.freeze([]);
  return Object.freeze(input.map((item, index) => parseHostPattern(item, `${where}[${index}]`)));
}

/** The host of a request as the proxy compares it (authority.ts), or '' when it is not a host. */
export function normalizeHost(host: string): string {
  return canonicalHost(host.trim()) ?? '';
}

/** Does `pattern` match the (normalized) host and port of a connection? */
export function matchesHost(pattern: HostPattern, host: string, port: number): boolean {
  if (pattern.port !== undefined && pattern.port !== port) return false;
  const literal = isIP(host) !== 0;
  switch (pattern.kind) {
    case 'any':
      return !literal;
    case 'ip':
      return literal && pattern.host === host;
    case 'name':
      return !literal && pattern.host === host;
    case 'wildcard':
      return !literal && host.endsWith(`.${pattern.host}`);
  }
}

export function findMatch(patterns: readonly HostPattern[], host: string, port: number): HostPattern | undefined {
  return patterns.find((pattern) => matchesHost(pattern, host, port));
}

/** Could some connection match both patterns? (Used to tell whether a bound secret can reach anything.) */
export function patternsOverlap(a: HostPattern, b: HostPattern): boolean {
  if (a.port !== undefined && b.port !== undefined && a.port !== b.port) return false;
  return hostSetsOverlap(a, b);
}

/** Does `outer` match every connection `inner` matches? (A deny pattern that covers a bound host.) */
export function patternCovers(outer: HostPattern, inner: HostPattern): boolean {
  if (outer.port !== undefined && outer.port !== inner.port) return false;
  switch (outer.kind) {
    case 'any':
      return inner.kind !== 'ip';
    case 'ip':
    case 'name':
      return inner.kind === outer.kind && inner.host === outer.host;
    case 'wildcard':
      return (inner.kind === 'name' || inner.kind === 'wildcard') &&
        (inner.host.endsWith(`.${outer.host}`) || (inner.kind === 'wildcard' && inner.host === outer.host));
  }
}

function hostSetsOverlap(a: HostPattern, b: HostPattern): boolean {
  if (a.kind === 'ip' || b.kind === 'ip') return a.kind === b.kind && a.host === b.host;
  if (a.kind === 'any' || b.kind === 'any') return true;
  if (a.kind === 'name' && b.kind === 'name') return a.host === b.host;
  if (a.kind === 'wildcard' && b.kind === 'wildcard') {
    return a.host === b.host || a.host.endsWith(`.${b.host}`) || b.host.endsWith(`.${a.host}`);
  }
  const [wild, name] = a.kind === 'wildcard' ? [a, b] : [b, a];
  return name.host.endsWith(`.${wild.host}`);
}

function splitPort(text: string, where: string): { hostPart: string; port: number | undefined } {
  const bracketEnd = text.lastIndexOf(']');
  const colon = text.lastIndexOf(':');
  // A bare IPv6 literal has several colons and no brackets: no port part.
  if (colon === -1 || colon < bracketEnd || (bracketEnd === -1 && text.indexOf(':') !== colon)) {
    return { hostPart: text, port: undefined };
  }
  const portText = text.slice(colon + 1);
  const port = /^[0-9]{1,5}$/.test(portText) ? Number(portText) : NaN;
  if (!(port >= 1 && port <= 65535)) {
    throw invalid(where, `${where} \`${text}\` has port \`${portText}\`; a port is a number from 1 to 65535.`, text);
  }
  return { hostPart: text.slice(0, colon), port };
}

function freeze(pattern: HostPattern): HostPattern {
  return Object.freeze(pattern);
}

function invalid(where: string, message: string, pattern: string): ExecgateError {
  return new ExecgateError('EXECGATE_ERR_EGRESS_HOST_PATTERN_INVALID', message, { where, pattern });
}
