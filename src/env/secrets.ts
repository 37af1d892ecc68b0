/*
 * Rules for secret-looking environment variables: by name and by value.
 *
 * Names are split into words, and a variable is secret-looking when one word is in SECRET_WORDS.
 * Words break at every character that is not a letter or digit (`_`, `-`, `.`, `/`, `:` ...),
 * at a lower-to-upper case change (`apiKey` -> api, Key), before the last capital of an acronym
 * (`APIKey` -> API, Key) and between letters and digits (`P4PASSWD` -> P, 4, PASSWD). Words are
 * compared upper-cased. So `KEYBOARD_LAYOUT`, `PWD`, `OLDPWD`, `TOKENIZERS_PARALLELISM` and
 * `PASSENGER_X` stay, while `GITHUB_TOKEN`, `db.password`, `apiKey` and `SECRET2` are withheld.
 *
 * `SESSION` is a secret word, which would also catch a few well-known harmless names. Those below
 * describe the login session, not a credential, and are exempt from the name rules (not from the
 * value rules). `SSH_AUTH_SOCK` is exempt too: it is a trust redirect (kept, reported), and the
 * word `AUTH` must not silently turn that policy decision into a withholding.
 *
 * `DBUS_SESSION_BUS_ADDRESS` and `SESSION_MANAGER` are deliberately NOT exempt: the session bus
 * address is what lets a process talk to the Secret Service (the OS keyring), so a child that
 * has it can read every unlocked secret. The gateway reads the keyring through its own
 * environment, never through the child's, so withholding the address from children costs the
 * gateway nothing. A policy that needs it (e.g. for `notify-send`) lists it in `allowSecrets`.
 *
 * Value rules follow gitleaks and detect-secrets. Where a token has a fixed prefix, the prefix
 * must not continue a longer word (`task-...` is not an OpenAI key) and, for tokens whose body
 * can fail after a long scan (JWT), a match can only start at the beginning of a run; both keep
 * every rule linear in the length of the value, so a 128 KiB value cannot stall the gateway.
 */

/** The project's own secret source; it never reaches a child and no policy can release it. */
export const EXECGATE_SECRET_PREFIX = 'EXECGATE_SECRET_';

export const SECRET_WORDS: ReadonlySet<string> = new Set([
  'KEY',
  'KEYS',
  'APIKEY',
  'APIKEYS',
  'SECRET',
  'SECRETS',
  'TOKEN',
  'TOKENS',
  'PASSWORD',
  'PASSWORDS',
  'PASSWD',
  'PASS',
  'PASSPHRASE',
  'CREDENTIAL',
  'CREDENTIALS',
  'PRIVATE',
  'AUTH',
  'COOKIE',
  'COOKIES',
  'SESSION',
  'SIGNATURE',
  'DSN',
]);

/** Compared upper-cased. The last three escape the word rule (`PGPASSWORD`, `MYSQL_PWD`, `SSHPASS`). */
export const SECRET_NAMES: ReadonlySet<string> = new Set([
  'DATABASE_URL',
  'REDIS_URL',
  'MONGODB_URI',
  'AWS_ACCESS_KEY_ID',
  'AWS_SECRET_ACCESS_KEY',
  'AWS_SESSION_TOKEN',
  'GOOGLE_APPLICATION_CREDENTIALS',
  'AZURE_CLIENT_SECRET',
  'PGPASSWORD',
  'MYSQL_PWD',
  'SSHPASS',
]);

/** Exact, case-sensitive names exempt from the name rules (see the top of this file). */
export const HARMLESS_NAMES: ReadonlySet<string> = new Set([
  'XDG_SESSION_ID',
  'XDG_SESSION_TYPE',
  'XDG_SESSION_CLASS',
  'XDG_SESSION_DESKTOP',
  'DESKTOP_SESSION',
  'TERM_SESSION_ID',
  'ITERM_SESSION_ID',
  'SSH_AUTH_SOCK',
]);

/** Prefix guard: the token must not continue a longer alphanumeric word. */
const START = '(?<![A-Za-z0-9])';

export const SECRET_VALUE_PATTERNS: ReadonlyArray<{ readonly id: string; readonly pattern: RegExp }> = Object.freeze([
  { id: 'aws-access-key-id', pattern: /\b(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{16}\b/ },
  { id: 'github-token', pattern: new RegExp(`${START}(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36}`) },
  { id: 'github-fine-grained-token', pattern: new RegExp(`${START}github_pat_\\w{82}`) },
  { id: 'slack-token', pattern: new RegExp(`${START}xox[abposr]-[0-9A-Za-z-]{10,}`) },
  { id: 'anthropic-key', pattern: new RegExp(`${START}sk-ant-[A-Za-z0-9_-]{20,}`) },
  { id: 'openai-style-key', pattern: new RegExp(`${START}sk-[A-Za-z0-9_-]{20,}`) },
  { id: 'stripe-key', pattern: new RegExp(`${START}(?:sk|rk)_(?:test|live)_[A-Za-z0-9]{10,}`) },
  { id: 'npm-token', pattern: new RegExp(`${START}npm_[A-Za-z0-9]{36}`) },
  { id: 'google-api-key', pattern: new RegExp(`${START}AIza[\\w-]{35}`) },
  { id: 'private-key-block', pattern: /-----BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----/ },
  {
    id: 'jwt',
    pattern: /(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]*/,
  },
  // The scheme is bounded so that a long run of letters before `://` costs a constant per start.
  { id: 'url-with-credentials', pattern: /[a-z][a-z0-9+.-]{0,31}:\/\/[^/\s:@]+:[^/\s@]+@/i },
].map((entry) => Object.freeze(entry)));

const WORD = /[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+/g;

/** The upper-cased words of a variable name (see the top of this file for where words break). */
export function getNameWords(name: string): string[] {
  return (name.match(WORD) ?? []).map((word) => word.toUpperCase());
}

export function isExecgateSecretName(name: string): boolean {
  return name.toUpperCase().startsWith(EXECGATE_SECRET_PREFIX);
}

/** True when the name alone says the variable holds a credential. */
export function isSecretName(name: string): boolean {
  if (isExecgateSecretName(name)) return true;
  if (HARMLESS_NAMES.has(name)) return false;
  if (SECRET_NAMES.has(name.toUpperCase())) return true;
  return getNameWords(name).some((word) => SECRET_WORDS.has(word));
}

/** True when the value looks like a credential, whatever the variable is called. */
export function isSecretValue(value: string): boolean {
  return SECRET_VALUE_PATTERNS.some(({ pattern }) => pattern.test(value));
}
