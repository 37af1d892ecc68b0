/*
 * RefStore: resolves reference tokens through an ordered list of sources, first hit wins.
 * Host-registered values (set/has/delete) are always the first source. A token no source knows
 * stays literal in the command; a source that throws fails the whole request closed.
 */
import { ExecgateError, describeValue } from '../errors';
import { SecretValue } from './secret-value';
import { suggestNames } from './suggest';
import { isValidRefId, scanTokens } from './tokens';
import { REF_KINDS, type LookupContext, type RefKind, type RefSource, type RefToken } from './types';

/**
 * One reference as resolved: its canonical spelling, whether found, by which source, and the
 * wrapped value.
 */
export interface ResolvedRef {
  readonly kind: RefKind;
  readonly id: string;
  /** Canonical spelling, `<<kind:id>>`: safe to log. */
  readonly ref: string;
  readonly found: boolean;
  /** Name of the source that answered, when found. */
  readonly source?: string;
  /** The value, wrapped so that it never serialises; absent when not found. */
  readonly value?: SecretValue;
}

/**
 * Every token of a command and what each resolved to.
 */
export interface Resolution {
  /** Every token in the command, in order (repeats included). */
  readonly tokens: readonly RefToken[];
  /** One entry per distinct reference, in order of first appearance. */
  readonly refs: readonly ResolvedRef[];
}

export interface ResolveOptions {
  /** Accept `{{kind:id}}` (default true). */
  alias?: boolean;
}

/** A listing is a convenience: never wait long on a keyring that prompts for unlocking. */
const SUGGEST_TIMEOUT_MS = 2_000;

async function withTimeout(listing: Promise<readonly string[]>, ms: number): Promise<readonly string[]> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<readonly string[]>((resolve) => {
    timer = setTimeout(() => resolve([]), ms);
    timer.unref();
  });
  try {
    return await Promise.race([listing.catch(() => []), expired]);
  } finally {
    clearTimeout(timer);
  }
}

export function getRefKey(kind: RefKind, id: string): string {
  return `${kind}:${id}`;
}

export function formatRef(kind: RefKind, id: string): string {
  return `<<${kind}:${id}>>`;
}

/**
 * Resolves reference tokens against an ordered list of sources (environment, keyring, vault, your
 * own); values come back wrapped in {@link SecretValue}.
 */
export class RefStore {
  readonly #memory = new Map<string, string>();
  readonly #sources: RefSource[] = [];

  constructor(sources: readonly RefSource[] = []) {
    for (const source of sources) this.addSource(source);
  }

  /** Register a value in memory (the first source). */
  set(kind: RefKind, id: string, value: string): this {
    validateKindAndId(kind, id);
    if (typeof value !== 'string' || value === '') {
      throw new ExecgateError(
        'EXECGATE_ERR_REF_INVALID',
        `Expected the value for ${formatRef(kind, id)} to be a non-empty string, got ${typeof value === 'string' ? 'an empty string' : `a value of type ${typeof value}`}.`,
      );
    }
    this.#memory.set(getRefKey(kind, id), value);
    return this;
  }

  /** Whether a value is registered in memory for this reference. */
  has(kind: RefKind, id: string): boolean {
    return this.#memory.has(getRefKey(kind, id));
  }

  delete(kind: RefKind, id: string): boolean {
    return this.#memory.delete(getRefKey(kind, id));
  }

  /**
   * Add a source after the existing ones (or first, after memory, with `{first: true}`).
   * A host can plug in its own secret manager this way.
   */
  addSource(source: RefSource, options: { first?: boolean } = {}): this {
    validateSource(source);
    if (this.#sources.some((existing) => existing.name === source.name)) {
      throw new ExecgateError('EXECGATE_ERR_REF_INVALID', `A source named \`${source.name}\` is already registered.`);
    }
    if (options.first) this.#sources.unshift(source);
    else this.#sources.push(source);
    return this;
  }

  /** Source names in lookup order, memory first. */
  get sourceNames(): string[] {
    return ['memory', ...this.#sources.map((source) => source.name)];
  }

  /** Look one reference up through every source. */
  async lookup(kind: RefKind, id: string, context?: LookupContext): Promise<ResolvedRef> {
    validateKindAndId(kind, id);
    const ref = formatRef(kind, id);
    const remembered = this.#memory.get(getRefKey(kind, id));
    if (remembered !== undefined) {
      return { kind, id, ref, found: true, source: 'memory', value: new SecretValue(remembered, `${kind}:${id}`) };
    }
    for (const source of this.#sources) {
      if (!source.kinds.includes(kind)) continue;
      let answer;
      try {
        answer = await source.lookup(kind, id, context);
      } catch (error) {
        if (error instanceof ExecgateError && error.code === 'EXECGATE_ERR_REF_SOURCE_FAILED') throw error;
        const reason = error instanceof ExecgateError ? error.toLine() : error instanceof Error ? error.message : String(error);
        throw new ExecgateError(
          'EXECGATE_ERR_REF_SOURCE_FAILED',
          `The ${source.name} source could not resolve ${ref}: ${reason}. Nothing was run.`,
          { reference: ref, source: source.name },
          { cause: error },
        );
      }
      if (answer && answer.found) {
        if (typeof answer.value !== 'string' || answer.value === '') {
          throw new ExecgateError(
            'EXECGATE_ERR_REF_SOURCE_FAILED',
            `The ${source.name} source returned an empty or non-string value for ${ref}. Nothing was run.`,
            { reference: ref, source: source.name },
          );
        }
        return { kind, id, ref, found: true, source: answer.source ?? source.name, value: new SecretValue(answer.value, `${kind}:${id}`) };
      }
    }
    return { kind, id, ref, found: false };
  }

  /**
   * Names close to `id` that some source holds ("did you mean"), closest first, at most three.
   * Listings only: no value is read. A source that cannot list within `timeoutMs` offers none.
   */
  async suggest(kind: RefKind, id: string, timeoutMs = SUGGEST_TIMEOUT_MS): Promise<string[]> {
    const names: string[] = [];
    for (const key of this.#memory.keys()) if (key.startsWith(`${kind}:`)) names.push(key.slice(kind.length + 1));
    const listings = this.#sources.filter((source) => source.list && source.kinds.includes(kind)).map((source) => withTimeout(Promise.resolve().then(() => source.list!(kind)), timeoutMs));
    for (const listed of await Promise.all(listings)) names.push(...listed);
    return suggestNames(id, names);
  }

  /** Find every token in `command` and resolve each distinct reference once. */
  async resolve(command: string, options: ResolveOptions = {}): Promise<Resolution> {
    if (typeof command !== 'string') {
      throw new ExecgateError('EXECGATE_ERR_INVALID_COMMAND', `Expected a command string, got ${describeValue(command)}.`);
    }
    return this.resolveTokens(scanTokens(command, { alias: options.alias ?? true }));
  }

  /** Resolve already scanned tokens, each distinct reference once. */
  async resolveTokens(tokens: readonly RefToken[], context?: LookupContext): Promise<Resolution> {
    const refs: ResolvedRef[] = [];
    const seen = new Set<string>();
    for (const token of tokens) {
      const key = getRefKey(token.kind, token.id);
      if (seen.has(key)) continue;
      seen.add(key);
      refs.push(await this.lookup(token.kind, token.id, context));
    }
    return { tokens, refs };
  }
}

function validateKindAndId(kind: unknown, id: unknown): asserts kind is RefKind {
  if (typeof kind !== 'string' || !(REF_KINDS as readonly string[]).includes(kind)) {
    throw new ExecgateError(
      'EXECGATE_ERR_REF_INVALID',
      `Expected the reference kind to be \`secret\` or \`decrypt\`, got ${describeValue(kind)}.`,
    );
  }
  if (typeof id !== 'string' || !isValidRefId(id)) {
    throw new ExecgateError(
      'EXECGATE_ERR_REF_INVALID',
      `Expected the reference name to be 1 to 128 characters of A-Z a-z 0-9 . _ - / starting with a letter or digit, got ${describeValue(id)}.`,
    );
  }
}

function validateSource(source: RefSource): void {
  if (
    !source || typeof source !== 'object' ||
    typeof source.name !== 'string' || source.name === '' ||
    !Array.isArray(source.kinds) || typeof source.lookup !== 'function'
  ) {
    throw new ExecgateError(
      'EXECGATE_ERR_REF_INVALID',
      'A RefSource must be an object with a non-empty `name`, a `kinds` array and a `lookup(kind, id)` function.',
    );
  }
}
