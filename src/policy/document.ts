/*
 * An EffectivePolicy written back as a policy document (the file format): what
 * `execgate policy show` prints. The result has the schema's type, validates against the schema
 * and loads to the same policy, so it can be saved and used as a flattened policy file.
 */
import type { EffectivePolicy, ExecMode } from './effective';
import { EXEC_MODES } from './effective';
import type { CommandMatch } from './match';
import type { ModeDocument, PolicyDocument, RuleDocument } from './schema-def';
import { formatDuration, formatSize } from './units';

function matchToDocument(match: CommandMatch): Pick<RuleDocument, 'command' | 'flags' | 'prefix' | 'regex'> {
  if (match.kind === 'command') {
    const commands = match.commands.map((words) => words.join(' '));
    const command = commands.length === 1 ? commands[0] : commands;
    return match.flags ? { command, flags: [...match.flags] } : { command };
  }
  if (match.kind === 'prefix') return { prefix: match.prefixes.length === 1 ? match.prefixes[0] : [...match.prefixes] };
  return { regex: match.source ?? (match.regex instanceof RegExp ? match.regex.source : match.regex.pattern()) };
}

export function policyToDocument(policy: EffectivePolicy): PolicyDocument {
  const modes: Partial<Record<ExecMode, ModeDocument>> = {};
  for (const mode of EXEC_MODES) {
    const limits = policy.modes[mode];
    modes[mode] = { allowed: limits.allowed, timeout: formatDuration(limits.defaultTimeout), maxTimeout: formatDuration(limits.maxTimeout) };
  }
  return {
    version: 1,
    exec: {
      modes,
      grace: formatDuration(policy.grace),
      drainTimeout: formatDuration(policy.drainTimeout),
      output: { maxBytes: formatSize(policy.output.maxBytes), maxFileBytes: formatSize(policy.output.maxFileBytes) },
      background: {
        maxConcurrent: policy.background.maxConcurrent,
        maxFileBytes: formatSize(policy.background.maxFileBytes),
        ringBytes: formatSize(policy.background.ringBytes),
        onClose: policy.background.onClose,
      },
    },
    cwd: { roots: [...policy.cwd.roots] },
    env: {
      mode: policy.env.mode,
      allowlist: [...policy.env.allowlist],
      allowSecrets: [...policy.env.allowSecrets],
      strip: [...policy.env.strip],
      secretNamePatterns: policy.env.secretNamePatterns.map((pattern) => pattern.source),
      secretValuePatterns: policy.env.secretValuePatterns.map((pattern) => pattern.source),
      set: { ...policy.env.set },
      ...(policy.env.path !== undefined ? { path: policy.env.path } : {}),
      ...(policy.env.requestable !== undefined ? { requestable: [...policy.env.requestable] } : {}),
    },
    rules: {
      default: policy.rules.default,
      ...(policy.rules.uncertain !== undefined ? { uncertain: policy.rules.uncertain } : {}),
      ...(policy.rules.reason !== undefined ? { reason: policy.rules.reason } : {}),
      list: policy.rules.list.map((rule) => ({
        id: rule.id,
        action: rule.action,
        ...matchToDocument(rule.match),
        ...(rule.reason !== undefined ? { reason: rule.reason } : {}),
      })),
    },
    secrets: {
      alias: policy.secrets.alias,
      minLength: policy.secrets.minLength,
      allow: [...policy.secrets.allow],
      unknown: policy.secrets.unknown,
      restrict: policy.secrets.restrict.map((restriction) => ({
        id: restriction.id,
        ref: restriction.refs.length === 1 ? restriction.refs[0] : [...restriction.refs],
        ...matchToDocument(restriction.match),
        ...(restriction.reason !== undefined ? { reason: restriction.reason } : {}),
      })),
      bind: policy.secrets.bind.map((binding) => ({
        ref: binding.ref,
        hosts: binding.hosts.map((host) => host.text),
        delivery: binding.delivery,
        // Where an injected value may go, spelt out (the defaults too): what a reviewer must see.
        ...(binding.delivery === 'inject'
          ? {
            headers: [...binding.place.headers],
            query: [...binding.place.query],
            cookies: [...binding.place.cookies],
            path: binding.place.path,
            body: binding.place.body,
            ...(binding.methods ? { methods: [...binding.methods] } : {}),
            ...(binding.paths ? { paths: [...binding.paths] } : {}),
            http: binding.http.map((host) => host.text),
            responses: binding.responses,
          }
          : {}),
        ...(binding.aws
          ? {
            ...(binding.aws.services ? { services: [...binding.aws.services] } : {}),
            ...(binding.aws.regions ? { regions: [...binding.aws.regions] } : {}),
            presign: binding.aws.presign && binding.aws.presignMaxExpiry !== undefined ? { maxExpiry: binding.aws.presignMaxExpiry } : binding.aws.presign,
          }
          : {}),
        ...(binding.delivery === 'ssh-agent' ? { hostKeys: (binding.hostKeys ?? []).map((key) => key.line) } : {}),
      })),
    },
    audit: {
      enabled: policy.audit.enabled,
      ...(policy.audit.path !== undefined ? { path: policy.audit.path } : {}),
      ...(policy.audit.destination !== undefined ? { destination: policy.audit.destination } : {}),
      ...(policy.audit.maxBytes !== undefined ? { maxBytes: formatSize(policy.audit.maxBytes) } : {}),
      ...(policy.audit.maxFiles !== undefined ? { maxFiles: policy.audit.maxFiles } : {}),
      ...(policy.audit.fsync !== undefined ? { fsync: policy.audit.fsync } : {}),
      fingerprints: policy.audit.fingerprints,
      env: policy.audit.env,
    },
    sandbox: {
      mode: policy.sandbox.mode,
      ...(policy.sandbox.helper !== undefined ? { helper: policy.sandbox.helper } : {}),
      // The plain spelling when the egress policy says no more than it; the egress object otherwise.
      network: policy.network.mode === policy.sandbox.network && policy.network.allow.length === 0 && policy.network.deny.length === 0 && policy.network.upstream === undefined
        ? policy.sandbox.network
        : {
          mode: policy.network.mode,
          allow: policy.network.allow.map((host) => host.text),
          deny: policy.network.deny.map((host) => host.text),
          ...(policy.network.upstream
            ? {
              upstream: {
                ...(policy.network.upstream.proxy !== undefined ? { proxy: policy.network.upstream.proxy } : {}),
                ...(policy.network.upstream.noProxy !== undefined ? { noProxy: [...policy.network.upstream.noProxy] } : {}),
                ca: [...policy.network.upstream.ca],
              },
            }
            : {}),
        },
      filesystem: {
        hidden: [...policy.sandbox.filesystem.hidden],
        writable: [...policy.sandbox.filesystem.writable],
        readOnly: [...policy.sandbox.filesystem.readOnly],
      },
    },
  };
}
