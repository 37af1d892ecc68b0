/*
 * The parts of the policy schema the egress proxy reads (policy/egress-settings.ts compiles them):
 * `sandbox.network` in its object form, with `upstream`, and `secrets.bind` entries, with the
 * host patterns and HTTP tokens they hold. schema-def.ts puts them in the file's `$defs`.
 */
import { Type } from '@sinclair/typebox';
import { oneOfValues, ref } from './schema-def-builders';

export const HttpToken = Type.String({
  title: 'an HTTP token (a header, parameter or cookie name, or a method)',
  pattern: "^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,256}$",
});

export const HostPattern = Type.String({
  title: 'a host pattern: `api.github.com`, `*.npmjs.org`, `*`, `192.0.2.10`, `[2001:db8::1]`, each with an optional `:PORT`',
  minLength: 1,
  maxLength: 300,
});

export const SecretBinding = Type.Object({
  ref: Type.String({
    title: 'one reference, `secret:NAME` or `decrypt:ID` (no `*`)',
    pattern: '^(secret|decrypt):[A-Za-z0-9][A-Za-z0-9._/-]{0,127}$',
  }),
  hosts: Type.Optional(Type.Array(ref('hostPattern', HostPattern), {
    maxItems: 256,
    description: 'The hosts the secret is for (at least one; `aws-sigv4` defaults to `*.amazonaws.com` and `amazonaws.com`). They also bound what the run may reach: intersected with `sandbox.network`.',
  })),
  delivery: Type.Optional(oneOfValues(['env', 'inject', 'aws-sigv4', 'ssh-agent'], {
    description: "`env` (default): the value is in the child's environment, the run gets a network namespace of its own, and every connection of the run is limited to these hosts. `inject`: the child holds a random sentinel of the same shape; the egress proxy swaps in the value only over TLS to these hosts on their port (443 when a pattern names none), only where `headers`, `query`, `cookies`, `path` and `body` allow; a sentinel anywhere else fails the request (needs the sandbox). `aws-sigv4`: the value is an AWS credential (JSON `accessKeyId`, `secretAccessKey`, `sessionToken`); every sandboxed run gets a placeholder pair of the same shape in `AWS_ACCESS_KEY_ID` / `AWS_SECRET_ACCESS_KEY` / `AWS_SESSION_TOKEN`, and the egress proxy checks each request to these hosts is signed with the run's placeholder, then signs it again with the real key (SigV4). `ssh-agent`: the value is an SSH private key (`execgate secret set NAME --ssh-key FILE`); every sandboxed run gets an SSH agent socket of the gateway (`SSH_AUTH_SOCK`) that signs with it only to log in to a server holding one of `hostKeys`, and a known-hosts file naming these hosts (`host` or `host:port`, port 22 by default, named exactly); the key never enters the sandbox, and the command may not use the reference.",
  })),
  hostKeys: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 16384 }), {
    maxItems: 64,
    description: '`ssh-agent` only, and required there: the OpenSSH public-key lines (`ssh-ed25519 AAAA...`, as in a `.pub` file or `ssh-keyscan` output) of the servers the key may log in to. The agent signs only for a session whose server proved it holds one of them.',
  })),
  headers: Type.Optional(Type.Array(ref('httpToken', HttpToken), {
    maxItems: 64,
    description: '`inject` only. Headers whose whole credential may be the value: bare, after `Bearer` or `token`, or as the user or password of `Basic` credentials. Default `[Authorization]`; a list replaces it (write `[Authorization, X-Api-Key]` to keep both). `Host`, `Cookie`, `Content-Length` and other headers that frame or route a request cannot be listed.',
  })),
  query: Type.Optional(Type.Array(ref('httpToken', HttpToken), {
    maxItems: 64,
    description: '`inject` only. Query parameters whose whole (decoded) value may be the value, such as `access_token`. Default none.',
  })),
  cookies: Type.Optional(Type.Array(ref('httpToken', HttpToken), {
    maxItems: 64,
    description: '`inject` only. Cookies whose whole value may be the value. Default none.',
  })),
  path: Type.Optional(Type.Boolean({ description: '`inject` only. The value may be anywhere in the request path. Default false.' })),
  body: Type.Optional(Type.Boolean({
    description: '`inject` only. The value may be anywhere in an uncompressed request body. Default false: a body is what a server stores, and a stored value can be read back.',
  })),
  methods: Type.Optional(Type.Array(ref('httpToken', HttpToken), {
    minItems: 1,
    maxItems: 32,
    description: '`inject` only. Request methods the value is put into (`GET`, `POST`, ...). Default any.',
  })),
  paths: Type.Optional(Type.Array(Type.String({ pattern: '^/[^\\s?#%\\\\]*$', maxLength: 1024 }), {
    minItems: 1,
    maxItems: 256,
    description: '`inject` only. Paths the value is put into: a prefix ending at a segment boundary (`/repos` covers `/repos/x`, not `/reposx`), or a glob where `*` is one segment and `**` anything. A path with dot segments or encoded slashes never matches. Default any.',
  })),
  http: Type.Optional(Type.Array(ref('hostPattern', HostPattern), {
    maxItems: 64,
    description: "`inject` only. Hosts of this binding, named exactly (no wildcard), that may receive the value over plain HTTP, on the pattern's port (80 when it names none): for a local test server. Never after a redirect that changed scheme, host or port. Default none: the value goes over TLS only.",
  })),
  responses: Type.Optional(oneOfValues(['decode', 'identity'], {
    description: '`inject` only. `decode` (default): compressed responses (gzip, deflate, br) from these hosts are decoded, cleaned of the value and encoded again. `identity`: the proxy asks for uncompressed responses and refuses any encoded one. A response in an encoding the proxy cannot read is refused either way.',
  })),
  services: Type.Optional(Type.Array(Type.String({ pattern: '^[a-z0-9-]{1,64}$' }), {
    minItems: 1,
    maxItems: 256,
    description: '`aws-sigv4` only. Services (the credential scope\'s, such as `s3`, `sts`) the proxy signs for. Default any.',
  })),
  regions: Type.Optional(Type.Array(Type.String({ pattern: '^[a-z0-9-]{1,64}$' }), {
    minItems: 1,
    maxItems: 256,
    description: '`aws-sigv4` only. Regions (the credential scope\'s, such as `us-east-1`) the proxy signs in. Default any.',
  })),
  presign: Type.Optional(Type.Union([Type.Boolean(), Type.Object({
    maxExpiry: Type.Integer({ minimum: 1, maximum: 604800, description: 'The longest `X-Amz-Expires` signed, in seconds.' }),
  }, { additionalProperties: false })], {
    description: '`aws-sigv4` only. Whether query-signed (presigned) requests are signed again: `false` (default) refuses them, because a presigned URL carries a usable real signature to wherever it is sent; `true`, or `{maxExpiry: SECONDS}` to bound how long such a signature stays valid.',
  })),
}, {
  title: 'a secret bound to hosts: `{ref: secret:NAME, hosts: [HOST, ...], delivery: env|inject|aws-sigv4|ssh-agent, headers, query, ..., hostKeys}`',
  additionalProperties: false,
});

export const Upstream = Type.Object({
  proxy: Type.Optional(Type.String({
    maxLength: 2048,
    description: "A parent proxy, `http://host:port` (credentials are better given in the gateway's `HTTPS_PROXY` than in a policy file), or `direct` to ignore the gateway's proxy variables. Its credentials never enter a sandbox.",
  })),
  noProxy: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 300 }), {
    maxItems: 1024,
    description: "Hosts reached without the parent proxy, as in `NO_PROXY`: a name covers its subdomains, `*` covers everything. Default: the gateway's `NO_PROXY`.",
  })),
  ca: Type.Optional(Type.Array(Type.String({ pattern: '^/', maxLength: 4096 }), {
    maxItems: 64,
    description: "Absolute paths of PEM files with CA certificates the proxy trusts for upstream TLS, on top of the system's (a company's private CA).",
  })),
}, {
  additionalProperties: false,
  description: "How the egress proxy's own connections leave the gateway. Default: as the gateway's own environment says (`HTTPS_PROXY` for tunnels and TLS, `HTTP_PROXY` for plain HTTP, `NO_PROXY`), with the system's CAs.",
});

export const Network = Type.Object({
  mode: Type.Optional(oneOfValues(['open', 'none', 'allowlist'], {
    description: '`open`: every host not denied; `none`: nothing leaves the run; `allowlist`: only hosts matching `allow` (and not `deny`).',
  })),
  allow: Type.Optional(Type.Array(ref('hostPattern', HostPattern), {
    maxItems: 1024,
    description: 'Host patterns that may be reached in `allowlist` mode. An IP literal is reachable (in any mode) only when a pattern names it.',
  })),
  deny: Type.Optional(Type.Array(ref('hostPattern', HostPattern), {
    maxItems: 1024,
    description: 'Host patterns never reached; deny wins over allow. Lists from extended policies are combined.',
  })),
  upstream: Type.Optional(Upstream),
  tcp: Type.Optional(Type.Array(Type.String({ title: 'a host name and port, `db.example.com:5432`', minLength: 3, maxLength: 300 }), {
    maxItems: 250,
    description: "Raw TCP destinations (`host:port`, port required, a host name: no IP literal, no wildcard) a run may reach with any client (`psql`, `nc`, `ssh`). Inside the run each name resolves (a generated `/etc/hosts`) to an address of its own in 127.77.0.0/16, where the gateway accepts and connects on to the real host after the same checks as for HTTP (`deny`, and names resolving to loopback, link-local, metadata or this host's addresses are refused). `mode: open` does not open raw TCP: only these are reached. Default none.",
  })),
  hostServices: Type.Optional(Type.Array(Type.Union([
    Type.Integer({ title: 'a port of the host\'s loopback (1-65535)' }),
    Type.Object({
      unix: Type.String({ pattern: '^/', maxLength: 100, description: 'An absolute path of a UNIX socket of the host, put at the same path inside every run.' }),
    }, { additionalProperties: false, title: 'a UNIX socket of the host: `{ unix: /abs/path }`' }),
  ]), {
    maxItems: 64,
    description: "Ports of the host's loopback forwarded into every run's loopback: `localhost:5432` inside reaches the host's `127.0.0.1:5432` (a local database, a dev server); `{ unix: /abs/path }`: the host's UNIX socket at that path, at the same path inside. Each opens that host service to every run under this policy. Default none.",
  })),
}, {
  additionalProperties: false,
  description: "What a sandboxed run may reach. The run has no network interface but loopback in `none` and `allowlist`; traffic leaves only through the gateway's egress proxy, which decides by host name and refuses names resolving to loopback, link-local, metadata or this host's addresses.",
});
