/*
 * A resolved value in transit. It is held in a private field so that logging, JSON
 * serialisation, string interpolation and util.inspect of a resolution never print it; the
 * one way to read it is an explicit `reveal()`, which only the spawn preparation calls.
 */
import { inspect } from 'node:util';

/**
 * A resolved value in transit: logging, JSON, string interpolation and `util.inspect` never print
 * it; `reveal()` is the one way to read it.
 */
export class SecretValue {
  readonly #value: string;
  readonly label: string;

  constructor(value: string, label: string) {
    this.#value = value;
    this.label = label;
  }

  reveal(): string {
    return this.#value;
  }

  get length(): number {
    return this.#value.length;
  }

  toString(): string {
    return `[secret ${this.label}]`;
  }

  toJSON(): string {
    return `[secret ${this.label}]`;
  }

  [inspect.custom](): string {
    return `SecretValue <${this.label}>`;
  }
}
