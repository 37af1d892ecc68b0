/*
 * What a policy's `sandbox.network` and `secrets.bind` tell the egress proxy: the sections as
 * read (their shape already checked by the schema) compiled into egress's NetworkPolicy and
 * SecretBinding: host patterns parsed, defaults filled in, header names lower-cased and methods
 * upper-cased.
 *
 * What the schema cannot say is checked here, each with its own error code so that a typo is
 * reported with its position at load time (check-file.ts), not discovered when a run needs the
 * network. Nothing else is: the types below are the schema's.
 */
import { posix } from 'node:path';
import { describeValue, ExecgateError } from '../errors';
import { matchesHost, parseHostPattern, parseHostPatterns, type HostPattern } from '../egress/hosts';
import {
  AWS_DEFAULT_HOSTS, DEFAULT_HTTP_PORT, DEFAULT_INJECT_PORT, DEFAULT_PLACEMENT, DEFAULT_SSH_PORT, OPEN_NETWORK, UNPLACEABLE_HEADERS, isProxyUrl,
  type AwsSettings, type NetworkPolicy, type Placement, type SecretBinding, type TcpEntry, type UpstreamPolicy,
} from '../egress/rules';
import { parseHostKeyLine } from '../egress/ssh/keys';
import type { NetworkDocument, SecretBindingDocument, UpstreamDocument } from './schema-def';

export function normalizeNetworkPolicy(input: NetworkDocument | undefined): NetworkPolicy {
  if (input === undefined) return OPEN_NETWORK;
  const upstream = input.upstream === undefined ? undefined : normalizeUpstream(input.upstream);
  const mode = input.mode ?? 'open';
  const tcp = normalizeTcp(input.tcp, mode);
  const hostServices = normalizeHostServices(input.hostServices, mode);
  const hostSockets = normalizeHostSockets(input.hostServices);
  return Object.freeze({
    mode,
    allow: parseHostPatterns(input.allow, 'sandbox.network.allow'),
    deny: parseHostPatterns(input.deny, 'sandbox.network.deny'),
    ...(upstream ? { upstream } : {}),
    ...(tcp.length > 0 ? { tcp } : {}),
    ...(hostServices.length > 0 ? { hostServices } : {}),
    ...(hostSockets.length > 0 ? { hostSockets } : {}),
  });
}

/*
 * `sandbox.network.tcp`: `host:port` by name. The run's network namespace routes nothing but
 * loopback, so a destination is reached only through the name the run's /etc/hosts gives an
 * address of its own: an IP literal has no name to resolve and is refused here, as is a wildcard
 * (no hosts file can list every subdomain) and an entry without a port (raw TCP has no default).
 */
export function normalizeTcp(input: readonly string[] | undefined, mode: NetworkPolicy['mode'] = 'allowlist', first = 0): readonly TcpEntry[] {
  if (input === undefined || input.length === 0) return Object.freeze([]);
  if (mode === 'none') throw tcpInvalid('`sandbox.network.tcp` is set with `mode: none`, where nothing leaves a run; remove it, or choose `mode: allowlist`.');
  const seen = new Set<string>();
  const out: TcpEntry[] = [];
  input.forEach((item, index) => {
    const where = `sandbox.network.tcp[${first + index}]`;
    const pattern = parseHostPattern(item, where);
    if (pattern.kind === 'ip') {
      throw tcpInvalid(`\`${where}\` is \`${pattern.text}\`, an IP literal: a run reaches raw TCP destinations by name only (its network has nothing but loopback). Name the host (\`db.example.com:${pattern.port ?? 'PORT'}\`, in DNS or the gateway's /etc/hosts).`);
    }
    if (pattern.kind !== 'name') {
      throw tcpInvalid(`\`${where}\` is \`${pattern.text}\`: raw TCP destinations are named one by one, without wildcards.`);
    }
    if (pattern.port === undefined) {
      throw tcpInvalid(`\`${where}\` is \`${pattern.text}\` with no port: write \`${pattern.host}:PORT\` (raw TCP has no default port).`);
    }
    const key = `${pattern.host}:${pattern.port}`;
    if (seen.has(key)) return;
    seen.add(key);
    out.push(Object.freeze({ text: pattern.text, host: pattern.host, port: pattern.port }));
  });
  return Object.freeze(out);
}

/** `sandbox.network.hostServices`: ports of the host's loopback, each once. */
export function normalizeHostServices(input: ReadonlyArray<number | { readonly unix: string }> | undefined, mode: NetworkPolicy['mode'] = 'allowlist', first = 0): readonly number[] {
  if (input === undefined || input.length === 0) return Object.freeze([]);
  if (mode === 'none') throw tcpInvalid('`sandbox.network.hostServices` is set with `mode: none`, where nothing leaves a run; remove it, or choose `mode: allowlist`.');
  const ports: number[] = [];
  input.forEach((entry, index) => {
    if (typeof entry === 'object') {
      // A socket is put at its own path inside the run: a plain absolute path, nothing to resolve.
      if (entry.unix !== posix.normalize(entry.unix) || entry.unix.endsWith('/') || entry.unix.includes('\0')) {
        throw tcpInvalid(`\`sandbox.network.hostServices[${first + index}].unix\` is ${describeValue(entry.unix)}; write the socket's absolute path without \`..\`, \`.\`, doubled or trailing slashes.`);
      }
      // /run is hidden in every sandbox (an empty tmpfs the mount check requires empty): a socket
      // cannot be put there. PostgreSQL's default socket directory is one; its TCP port is not.
      if (/^\/(var\/)?run(\/|$)/.test(entry.unix)) {
        throw tcpInvalid(`\`sandbox.network.hostServices[${first + index}].unix\` is ${describeValue(entry.unix)}, under /run, which every sandbox hides: forward the service's loopback port instead (\`hostServices: [5432]\`), or have it listen on a socket elsewhere.`);
      }
      return;
    }
    if (!Number.isInteger(entry) || entry < 1 || entry > 65535) {
      throw tcpInvalid(`\`sandbox.network.hostServices[${first + index}]\` is ${describeValue(entry)}; a host service is a port of the host's loopback, 1 to 65535.`);
    }
    ports.push(entry);
  });
  return Object.freeze([...new Set(ports)]);
}

/** The `{ unix: PATH }` entries of `sandbox.network.hostServices`, each once (checked by normalizeHostServices). */
function normalizeHostSockets(input: ReadonlyArray<number | { readonly unix: string }> | undefined): readonly string[] {
  return Object.freeze([...new Set((input ?? []).flatMap((entry) => (typeof entry === 'object' ? [entry.unix] : [])))]);
}

function tcpInvalid(message: string): ExecgateError {
  return new ExecgateError('EXECGATE_ERR_EGRESS_TCP_INVALID', message);
}

function normalizeUpstream(input: UpstreamDocument): UpstreamPolicy {
  const where = 'sandbox.network.upstream';
  const { proxy, noProxy, ca = [] } = input;
  // The schema holds a string; what it must be is a URL of a parent proxy, or `direct`.
  if (proxy !== undefined && proxy !== 'direct' && !isProxyUrl(proxy)) {
    throw upstreamInvalid(`Expected \`${where}.proxy\` to be \`direct\` or an \`http://host:port\` URL of a parent proxy, got ${describeValue(proxy)}.`);
  }
  // The schema refuses an empty entry; one of spaces alone names no host either.
  if (noProxy !== undefined && noProxy.some((entry) => entry.trim() === '')) {
    throw upstreamInvalid(`Expected \`${where}.noProxy\` to be a list of host names (NO_PROXY entries), got ${describeValue(noProxy)}.`);
  }
  return Object.freeze({
    ...(proxy !== undefined ? { proxy } : {}),
    ...(noProxy !== undefined ? { noProxy: Object.freeze([...noProxy]) } : {}),
    ca: Object.freeze([...ca]),
  });
}

export function normalizeSecretBindings(input: readonly SecretBindingDocument[] | undefined): readonly SecretBinding[] {
  if (input === undefined) return Object.freeze([]);
  const seen = new Set<string>();
  return Object.freeze(input.map((fields, index) => {
    const where = `secrets.bind[${index}]`;
    const { ref, delivery = 'env' } = fields;
    const hosts = fields.hosts ?? (delivery === 'aws-sigv4' ? AWS_DEFAULT_HOSTS : []);
    // One entry per reference: its hosts are the whole of where it may go (merge.ts says the
    // same across files, with positions; this holds for a list given on its own).
    if (seen.has(ref)) throw bindInvalid(`\`${ref}\` is bound twice in \`secrets.bind\`; list all its hosts in one entry.`);
    seen.add(ref);
    // The schema lets the list be empty so that the message can say what a binding needs.
    if (hosts.length === 0) {
      throw bindInvalid(`\`${where}\` (\`${ref}\`) lists no hosts: a bound secret must name at least one host it is for, such as \`hosts: [api.github.com]\`.`);
    }
    // Placement settings mean nothing when the command holds the value: the schema cannot tie
    // them to `delivery: inject`.
    const injectOnly = (['headers', 'query', 'cookies', 'path', 'body', 'methods', 'paths', 'http', 'responses'] as const).find((key) => fields[key] !== undefined);
    if (delivery === 'env' && injectOnly !== undefined) {
      throw bindInvalid(`\`${where}.${injectOnly}\` (\`${ref}\`) applies to \`delivery: inject\` only: with \`env\` the command holds the value and places it itself.`);
    }
    if (delivery === 'aws-sigv4' && injectOnly !== undefined) {
      throw bindInvalid(`\`${where}.${injectOnly}\` (\`${ref}\`) applies to \`delivery: inject\` only: with \`aws-sigv4\` the proxy signs requests, it places no value.`);
    }
    const awsOnly = (['services', 'regions', 'presign'] as const).find((key) => fields[key] !== undefined);
    if (delivery !== 'aws-sigv4' && awsOnly !== undefined) {
      throw bindInvalid(`\`${where}.${awsOnly}\` (\`${ref}\`) applies to \`delivery: aws-sigv4\` only.`);
    }
    if (delivery === 'ssh-agent') return normalizeSshBinding(fields, where);
    if (fields.hostKeys !== undefined) {
      throw bindInvalid(`\`${where}.hostKeys\` (\`${ref}\`) applies to \`delivery: ssh-agent\` only.`);
    }
    const parsedHosts = parseHostPatterns(hosts, `${where}.hosts`);
    return Object.freeze({
      ref,
      hosts: parsedHosts,
      delivery,
      // An AWS binding places no value: the proxy signs (an empty placement, so a placeholder in any header is refused).
      place: delivery === 'aws-sigv4' ? NO_PLACEMENT : normalizePlacement(fields, where, ref),
      ...normalizeScope(fields),
      http: normalizeHttp(fields.http, parsedHosts, where, ref),
      responses: fields.responses ?? 'decode',
      ...(delivery === 'aws-sigv4' ? { aws: normalizeAws(fields) } : {}),
    });
  }));
}

const NO_PLACEMENT: Placement = Object.freeze({ headers: Object.freeze([]), query: Object.freeze([]), cookies: Object.freeze([]), path: false, body: false });

function normalizeAws(fields: SecretBindingDocument): AwsSettings {
  const presign = fields.presign ?? false;
  return Object.freeze({
    ...(fields.services !== undefined ? { services: Object.freeze([...fields.services]) } : {}),
    ...(fields.regions !== undefined ? { regions: Object.freeze([...fields.regions]) } : {}),
    presign: presign !== false,
    ...(typeof presign === 'object' ? { presignMaxExpiry: presign.maxExpiry } : {}),
  });
}

function normalizePlacement(fields: SecretBindingDocument, where: string, ref: string): Placement {
  const headers = fields.headers === undefined ? DEFAULT_PLACEMENT.headers : Object.freeze(fields.headers.map((name) => name.toLowerCase()));
  // Any token is a header name to the schema; these frame or route the request.
  const framing = headers.find((name) => UNPLACEABLE_HEADERS.has(name));
  if (framing !== undefined) {
    const hint = framing === 'cookie' ? ' (name the cookie in `cookies` instead)' : '';
    throw bindInvalid(`\`${where}.headers\` (\`${ref}\`) names \`${framing}\`, which frames or routes the request; a credential cannot be placed there${hint}.`);
  }
  return Object.freeze({
    headers,
    query: Object.freeze([...(fields.query ?? [])]),
    cookies: Object.freeze([...(fields.cookies ?? [])]),
    path: fields.path ?? false,
    body: fields.body ?? false,
  });
}

function normalizeScope(fields: SecretBindingDocument): { methods?: readonly string[]; paths?: readonly string[] } {
  const out: { methods?: readonly string[]; paths?: readonly string[] } = {};
  if (fields.methods !== undefined) out.methods = Object.freeze(fields.methods.map((m) => m.toUpperCase()));
  if (fields.paths !== undefined) out.paths = Object.freeze([...fields.paths]);
  return out;
}

function normalizeHttp(input: readonly string[] | undefined, hosts: readonly HostPattern[], where: string, ref: string): readonly HostPattern[] {
  if (input === undefined) return Object.freeze([]);
  return Object.freeze(input.map((item, index) => {
    const pattern = parseHostPattern(item, `${where}.http[${index}]`);
    // By name: plain HTTP is for a named test or intranet service, never for a family of hosts.
    if (pattern.kind !== 'name' && pattern.kind !== 'ip') {
      throw bindInvalid(`\`${where}.http[${index}]\` (\`${ref}\`) is \`${pattern.text}\`; plain HTTP is allowed only to a host named exactly, not to a wildcard.`);
    }
    const withPort = Object.freeze({ ...pattern, port: pattern.port ?? DEFAULT_HTTP_PORT });
    if (!hosts.some((host) => matchesHost(host, withPort.host, withPort.port) || matchesHost(host, withPort.host, DEFAULT_INJECT_PORT))) {
      throw bindInvalid(`\`${where}.http[${index}]\` (\`${ref}\`) is \`${pattern.text}\`, which is not one of the binding's \`hosts\`.`);
    }
    return withPort;
  }));
}

/*
 * `delivery: ssh-agent`: an SSH key for named servers. Its hosts are also the run's raw TCP
 * destinations (egress/ssh/destinations.ts), so they follow the rule of `sandbox.network.tcp`: a
 * name (a run resolves it through its generated hosts file), a port (22 by default), no wildcard
 * and no IP literal. Its host keys are parsed now, so that a pasted line with a typo is an error at
 * load time with its position, not a server that is silently never trusted.
 */
function normalizeSshBinding(fields: SecretBindingDocument, where: string): SecretBinding {
  const { ref } = fields;
  if (!ref.startsWith('secret:')) {
    throw bindInvalid(`\`${where}\` (\`${ref}\`) uses \`delivery: ssh-agent\`, which takes a stored key, \`secret:NAME\` (store it with \`execgate secret set NAME --ssh-key FILE\`).`);
  }
  const injectOnly = (['headers', 'query', 'cookies', 'path', 'body', 'methods', 'paths', 'http', 'responses'] as const).find((key) => fields[key] !== undefined);
  if (injectOnly !== undefined) throw bindInvalid(`\`${where}.${injectOnly}\` (\`${ref}\`) applies to \`delivery: inject\` only, not to \`ssh-agent\`.`);
  const hosts = (fields.hosts ?? []).map((item, index) => {
    const pattern = parseHostPattern(item, `${where}.hosts[${index}]`);
    if (pattern.kind !== 'name') {
      const what = pattern.kind === 'ip' ? 'an IP literal (a run reaches SSH servers by name: name the host, as in `git.example.com:22`)' : 'a wildcard (name each server)';
      throw bindInvalid(`\`${where}.hosts[${index}]\` (\`${ref}\`) is \`${pattern.text}\`, ${what}.`);
    }
    return Object.freeze({ ...pattern, port: pattern.port ?? DEFAULT_SSH_PORT });
  });
  if (fields.hostKeys === undefined || fields.hostKeys.length === 0) {
    throw bindInvalid(`\`${where}\` (\`${ref}\`) has \`delivery: ssh-agent\` but no \`hostKeys\`: list the servers' public host keys (\`ssh-keyscan -t ed25519 HOST\` prints them; check them against what the server's operator publishes).`);
  }
  const hostKeys = fields.hostKeys.map((line, index) => {
    try {
      return parseHostKeyLine(line);
    } catch (error) {
      throw new ExecgateError('EXECGATE_ERR_SSH_HOST_KEY_INVALID', `\`${where}.hostKeys[${index}]\` (\`${ref}\`) is not an OpenSSH public-key line: ${(error as Error).message}.`, { ref });
    }
  });
  return Object.freeze({
    ref,
    hosts: Object.freeze(hosts),
    delivery: 'ssh-agent',
    place: DEFAULT_PLACEMENT,
    http: Object.freeze([]),
    responses: 'decode',
    hostKeys: Object.freeze(hostKeys),
  });
}

function bindInvalid(message: string): ExecgateError {
  return new ExecgateError('EXECGATE_ERR_EGRESS_BIND_INVALID', message);
}

function upstreamInvalid(message: string): ExecgateError {
  return new ExecgateError('EXECGATE_ERR_EGRESS_UPSTREAM_INVALID', message);
}
