/*
 * The registry of secret values for one run, and the entry points that redact with it. Values are
 * registered as bytes (UTF-8) in every spelling from ./encoders; the compiled matcher is rebuilt
 * lazily after a change, so registering many values costs one build.
 *
 * A redactor may also mask what another one masks (`setBase`): that one's compiled matcher is
 * scanned as it is, below this one's own patterns, so a large set of values compiled once (the
 * values a gateway remembers from earlier runs, memory.ts) costs a run nothing to set up. Its
 * patterns come after this redactor's own in index order, so where both match the same bytes the
 * region is named after this redactor's label, as if its values had been registered first.
 */
import { describeValue, ExecgateError } from '../errors';
import { getEncodedForms } from './encoders';
import { LayeredMatcher } from './layers';
import { createRegionState, redactRange, type CompiledPatterns } from './regions';
import { RedactionStream, toBytes, type RedactStream } from './stream';

export interface RedactorOptions {
  /** Encoded forms and single lines shorter than this are not registered; a whole value always is. Default 8. */
  minLength?: number;
}

export interface AddOptions {
  /** Also register the encoded forms (base64, hex, URL, JSON, shell, ...). Default true. */
  encodings?: boolean;
}

const DEFAULT_MIN_LENGTH = 8;

/**
 * A streaming redactor: replaces every registered value (and its encoded forms: base64, hex, JSON
 * and URL escapes, line-wrapped) in text or chunks, including across chunk boundaries.
 */
export class Redactor {
  readonly #minLength: number;
  readonly #values = new Set<string>();
  // pattern bytes (as latin1 text, a lossless key) -> pattern index; the first label registered wins
  readonly #patternIndex = new Map<string, number>();
  readonly #patterns: Buffer[] = [];
  readonly #replacements: Buffer[] = [];
  // Indexes of the patterns that also match across line breaks (the base64 spellings).
  readonly #tolerant = new Set<number>();
  #compiled: CompiledPatterns | undefined;
  // The matcher last compiled; kept when patterns are added, so that only they are built (layers.ts).
  #layered: LayeredMatcher | undefined;
  // Another redactor's patterns as compiled when it was set, masked below this one's (setBase).
  #base: BaseSnapshot | undefined;

  constructor(options: RedactorOptions = {}) {
    this.#minLength = normalizeMinLength(options?.minLength);
  }

  /** Register a secret value under `label`; its occurrences become `[REDACTED:${label}]`. */
  add(value: string, label: string, options: AddOptions = {}): void {
    validateString(value, 'value');
    validateString(label, 'label');
    if (value.length === 0) return;
    this.#values.add(value);
    const replacement = Buffer.from(`[REDACTED:${label}]`, 'utf8');
    const forms = getEncodedForms(value, { minLength: this.#minLength, encodings: options?.encodings !== false });
    for (const form of forms) {
      const { text } = form;
      let { wraps } = form;
      const bytes = Buffer.from(text, 'utf8');
      const key = bytes.toString('latin1');
      // A spelling the base has as line-tolerant is so here too: one registry would hold it once,
      // tolerant, under the first label (this redactor's).
      if (!wraps && this.#base?.isTolerant(key) === true) wraps = true;
      const known = this.#patternIndex.get(key);
      if (known !== undefined) {
        if (wraps && !this.#tolerant.has(known)) {
          this.#tolerant.add(known);
          this.#compiled = undefined;
          // A pattern already built changes: the next compilation starts over.
          this.#layered = undefined;
        }
        continue;
      }
      if (wraps) this.#tolerant.add(this.#patterns.length);
      this.#patternIndex.set(key, this.#patterns.length);
      this.#patterns.push(bytes);
      this.#replacements.push(replacement);
      this.#compiled = undefined;
    }
  }

  /**
   * Also mask every value `base` has registered so far (later additions to it are not seen),
   * under this redactor's labels where both mask the same bytes. `base` is compiled now if it is
   * not yet, and shared, not copied. A later call replaces the base; `undefined` removes it.
   */
  setBase(base: Redactor | undefined): void {
    if (base === this) throw new ExecgateError('EXECGATE_ERR_REDACT_INVALID_INPUT', 'A redactor cannot be its own base.', { argument: 'base' });
    if (base !== undefined && !(base instanceof Redactor)) {
      throw new ExecgateError('EXECGATE_ERR_REDACT_INVALID_INPUT', `Expected the redactor's base to be a Redactor, got ${describeValue(base)}.`, { argument: 'base' });
    }
    this.#base = base === undefined || base.patternCount === 0 ? undefined : base.#snapshot();
    this.#compiled = undefined;
    // Spellings registered here before, that the base has as line-tolerant (see add()).
    for (const [key, index] of this.#patternIndex) {
      if (!this.#tolerant.has(index) && this.#base?.isTolerant(key) === true) {
        this.#tolerant.add(index);
        this.#layered = undefined;
      }
    }
  }

  /** What another redactor scans when this one is its base: the patterns compiled so far. */
  #snapshot(): BaseSnapshot {
    const { matcher, replacements } = this.#getCompiled();
    const layered = matcher as LayeredMatcher;
    const patternIndex = this.#patternIndex;
    const tolerant = this.#tolerant;
    const count = layered.count;
    return {
      matcher: layered,
      replacements,
      size: this.size,
      isTolerant: (key) => {
        const index = patternIndex.get(key);
        return index !== undefined && index < count && tolerant.has(index);
      },
    };
  }

  /** Number of registered values (not patterns), the base's included. */
  get size(): number {
    return this.#values.size + (this.#base?.size ?? 0);
  }

  /** Every value registered here as given (not its encodings; not the base's). */
  values(): string[] {
    return [...this.#values];
  }

  /** Number of byte patterns the values expanded to, the base's included. */
  get patternCount(): number {
    return this.#patterns.length + (this.#base?.matcher.count ?? 0);
  }

  /** A new independent stream state, one per output stream. */
  createStream(): RedactStream {
    return new RedactionStream(() => this.#getCompiled());
  }

  redactString(text: string): { text: string; count: number } {
    const source = typeof text === 'string' ? text : String(text);
    if (this.patternCount === 0 || source.length === 0) return { text: source, count: 0 };
    const { buffer, count } = this.redactBuffer(Buffer.from(source, 'utf8'));
    // Untouched text is returned as given, so lone surrogates survive when nothing matched.
    return { text: count === 0 ? source : buffer.toString('utf8'), count };
  }

  redactBuffer(buffer: Buffer): { buffer: Buffer; count: number } {
    const bytes = toBytes(buffer);
    if (this.patternCount === 0 || bytes.length === 0) return { buffer: bytes, count: 0 };
    const state = createRegionState();
    const output = redactRange(this.#getCompiled(), bytes, bytes.length - 1, state);
    return { buffer: state.count === 0 ? bytes : output, count: state.count };
  }

  #getCompiled(): CompiledPatterns {
    if (this.#compiled) return this.#compiled;
    if (this.#patterns.length === 0 && this.#base === undefined) {
      // Nothing to mask (a run that resolved no value, in a gateway that knows none yet): the
      // one empty matcher, shared. Building one zeroes some 70 KiB of tables, which every such
      // run paid on its first byte of output. A value added later builds its own (#layered is
      // left unset).
      this.#compiled = { matcher: getEmptyMatcher(), replacements: this.#replacements };
      return this.#compiled;
    }
    if (this.#patterns.length > 0 || this.#base === undefined) {
      this.#layered = this.#layered ? LayeredMatcher.extend(this.#layered, this.#patterns, this.#tolerant) : LayeredMatcher.build(this.#patterns, this.#tolerant);
    }
    const base = this.#base;
    // Replacements are only ever appended, and the matcher reports indexes below its count.
    this.#compiled = base === undefined
      ? { matcher: this.#layered!, replacements: this.#replacements }
      // The base's indexes come after this redactor's own (layers.ts stack): its replacements too.
      : { matcher: LayeredMatcher.stack(this.#layered, base.matcher), replacements: this.#patterns.length === 0 ? base.replacements : this.#replacements.concat(base.replacements.slice(0, base.matcher.count)) };
    return this.#compiled;
  }
}

let emptyMatcher: LayeredMatcher | undefined;

/** A matcher of no patterns: only ever scanned (it finds nothing and holds nothing back), so one serves all. */
function getEmptyMatcher(): LayeredMatcher {
  emptyMatcher ??= LayeredMatcher.build([], new Set());
  return emptyMatcher;
}

/** Another redactor's compiled patterns, fixed when it became a base (Redactor#setBase). */
interface BaseSnapshot {
  readonly matcher: LayeredMatcher;
  readonly replacements: readonly Buffer[];
  readonly size: number;
  /** Whether the base has this spelling (bytes as latin1) among its line-tolerant ones. */
  isTolerant(key: string): boolean;
}

function normalizeMinLength(value: unknown): number {
  if (value === undefined) return DEFAULT_MIN_LENGTH;
  if (typeof value === 'number' && Number.isInteger(value) && value >= 1) return value;
  throw new ExecgateError(
    'EXECGATE_ERR_REDACT_INVALID_INPUT',
    `Expected the redactor's \`minLength\` option to be a positive integer, got ${describeValue(value)}.`,
    { argument: 'minLength' },
  );
}

// Fails closed: a value silently ignored because of its type would be a value silently leaked.
function validateString(value: unknown, name: 'value' | 'label'): void {
  if (typeof value === 'string') return;
  throw new ExecgateError(
    'EXECGATE_ERR_REDACT_INVALID_INPUT',
    `Expected the redaction \`${name}\` to be a string, got a value of type ${value === null ? 'null' : typeof value}.`,
    { argument: name },
  );
}
