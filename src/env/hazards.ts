/*
 * Environment variables that make a child run or load code it was not asked to (stripped), and
 * variables that redirect trust or traffic (kept, but reported).
 *
 * Sources: sudo's `initial_badenv_table`, glibc's `unsecvars.h` (the list ld.so drops for setuid
 * programs), git(1), and interpreter-injection write-ups. A name ending in `*` is a prefix.
 * Matching is case-sensitive, as it is for the loader, libc and the shells that read these.
 *
 * Additions beyond those sources, each for the same reason as its category:
 * `PS0`..`PS3` (prompt strings are expanded, `$(...)` included, by interactive shells, which a
 * PTY run may start), `NODE_REPL_EXTERNAL_MODULE` (node loads it in place of its REPL),
 * `GIT_CONFIG` (older gits read it as the config file) and `GIT_SEQUENCE_EDITOR` (runs a command),
 * bash's `BASH_XTRACEFD` (trace output, values included, to any descriptor), `BASH_COMPAT`,
 * `BASH_LOADABLES_PATH`, `EXECIGNORE`, `TMOUT`, `MAILPATH`, .NET startup hooks and profilers,
 * `SSLKEYLOGFILE` and OpenSSL's configuration, and curl's and wget's configuration files.
 */

export interface HazardCategory {
  readonly id: string;
  readonly why: string;
  readonly names: readonly string[];
}

function category(id: string, why: string, names: string[]): HazardCategory {
  return Object.freeze({ id, why, names: Object.freeze(names) });
}

export const HAZARD_CATEGORIES: ReadonlyArray<HazardCategory> = Object.freeze([
  category('dynamic-loader', 'Injects shared objects into every dynamically linked child.', [
    'LD_*',
    'DYLD_*',
    '_RLD*',
    'LDR_*',
    'LIBPATH',
    'SHLIB_PATH',
  ]),
  category('libc', 'libc loads modules or data from attacker-chosen paths, or resolves names through attacker-chosen DNS settings.', [
    'GCONV_PATH',
    'GLIBC_TUNABLES',
    'LOCPATH',
    'NLSPATH',
    'GETCONF_DIR',
    'MALLOC_*',
    'TZDIR',
    'RESOLV_HOST_CONF',
    'HOSTALIASES',
    'LOCALDOMAIN',
    'RES_OPTIONS',
    'NIS_PATH',
  ]),
  category('shell', 'Sourced or expanded by bash, sh or zsh at startup; SHELLOPTS=xtrace with PS4=\'$(cmd)\' runs code.', [
    'BASH_ENV',
    'ENV',
    'BASH_FUNC_*',
    'SHELLOPTS',
    'BASHOPTS',
    'PS0',
    'PS1',
    'PS2',
    'PS3',
    'PS4',
    'PROMPT_COMMAND',
    'IFS',
    'CDPATH',
    'GLOBIGNORE',
    'FPATH',
    'ZDOTDIR',
    'NULLCMD',
    'READNULLCMD',
    'TMPPREFIX',
    'HISTFILE',
    'BASH_XTRACEFD',
    'BASH_COMPAT',
    'BASH_LOADABLES_PATH',
    'EXECIGNORE',
    'TMOUT',
    'MAILPATH',
    'INPUTRC',
    'KSH_ENV',
  ]),
  category('dotnet', 'Loads startup hooks or profiler libraries into every .NET process.', [
    'DOTNET_STARTUP_HOOKS',
    'DOTNET_ADDITIONAL_DEPS',
    'DOTNET_SHARED_STORE',
    'CORECLR_PROFILER*',
    'CORECLR_ENABLE_PROFILING',
    'COR_PROFILER*',
    'COR_ENABLE_PROFILING',
  ]),
  category('tls-config', 'Writes TLS session keys to a file, or loads OpenSSL configuration, engines and providers from attacker-chosen paths.', [
    'SSLKEYLOGFILE',
    'OPENSSL_CONF',
    'OPENSSL_ENGINES',
    'OPENSSL_MODULES',
  ]),
  category('tool-config', 'Points curl and wget at another configuration file (which can add headers, upload files or run a proxy command).', [
    'CURL_HOME',
    'WGETRC',
    'SYSTEM_WGETRC',
  ]),
  category('node', 'Runs code before every node process, or changes what TLS trusts.', [
    'NODE_OPTIONS',
    'NODE_PATH',
    'NODE_EXTRA_CA_CERTS',
    'NODE_TLS_REJECT_UNAUTHORIZED',
    'NODE_REPL_EXTERNAL_MODULE',
  ]),
  category('python', 'Changes the module search path or imports arbitrary code at startup.', [
    'PYTHONPATH',
    'PYTHONHOME',
    'PYTHONUSERBASE',
    'PYTHONSTARTUP',
    'PYTHONINSPECT',
    'PYTHONWARNINGS',
    'PYTHONBREAKPOINT',
  ]),
  category('perl-ruby-php-lua', 'Preloads modules or code (-M / -r style) into every interpreter.', [
    'PERL5OPT',
    'PERL5LIB',
    'PERLLIB',
    'PERL5DB',
    'PERLIO_DEBUG',
    'RUBYOPT',
    'RUBYLIB',
    'PHPRC',
    'PHP_INI_SCAN_DIR',
    'LUA_INIT*',
    'LUA_PATH*',
    'LUA_CPATH*',
  ]),
  category('java', 'Adds JVM options (-javaagent loads a jar) or classes to every JVM.', [
    'JAVA_TOOL_OPTIONS',
    '_JAVA_OPTIONS',
    'JDK_JAVA_OPTIONS',
    'CLASSPATH',
  ]),
  category('git', 'Each runs a command or injects git config (core.fsmonitor, core.hooksPath, core.sshCommand).', [
    'GIT_SSH_COMMAND',
    'GIT_SSH',
    'GIT_PROXY_COMMAND',
    'GIT_ASKPASS',
    'SSH_ASKPASS',
    'GIT_EXTERNAL_DIFF',
    'GIT_PAGER',
    'GIT_EDITOR',
    'GIT_SEQUENCE_EDITOR',
    'GIT_EXEC_PATH',
    'GIT_CONFIG',
    'GIT_CONFIG_*',
    'GIT_DIR',
    'GIT_WORK_TREE',
    'GIT_TEMPLATE_DIR',
  ]),
  category('pager-editor', 'Runs a command when a tool pages, edits or opens a URL.', [
    'PAGER',
    'MANPAGER',
    'LESSOPEN',
    'LESSCLOSE',
    'EDITOR',
    'VISUAL',
    'BROWSER',
  ]),
  category('terminal', 'Terminal database parsers read files from attacker-chosen paths.', [
    'TERMINFO',
    'TERMINFO_DIRS',
    'TERMCAP',
    'TERMPATH',
  ]),
  category('kerberos', 'Redirects Kerberos configuration and keytab lookups.', ['KRB5_CONFIG*', 'KRB5_KTNAME']),
  category('execgate', 'The gateway\'s own settings: where it keeps its state, policy and sockets. A command has no use for them, and a nested execgate must not be pointed at the gateway\'s state (it finds an empty one either way).', [
    'EXECGATE_HOME',
    'EXECGATE_POLICY',
    'EXECGATE_KEYRING',
    'EXECGATE_SPAWNER',
    'EXECGATE_SPAWNER_SOCKET',
  ]),
]);

/*
 * Trust and traffic redirects: a policy decides; by default they are kept and their names
 * reported. The proxy names are honoured in any case by curl, wget, pip and friends, and npm
 * reads `npm_config_*` in any case, so those match case-insensitively. These names are still
 * subject to the secret rules: `HTTPS_PROXY=http://user:pw@host` or `npm_config__authToken` is
 * withheld, not reported.
 */
export const TRUST_REDIRECT_CATEGORY: HazardCategory = category(
  'trust-redirect',
  'Redirects network traffic, TLS trust or credentials (an SSH agent, a cluster, a Docker daemon) of the child.',
  [
    'HTTP_PROXY',
    'HTTPS_PROXY',
    'ALL_PROXY',
    'NO_PROXY',
    'SSL_CERT_FILE',
    'SSL_CERT_DIR',
    'REQUESTS_CA_BUNDLE',
    'CURL_CA_BUNDLE',
    'DOCKER_HOST',
    'KUBECONFIG',
    'SSH_AUTH_SOCK',
    'npm_config_*',
    'PIP_INDEX_URL',
    'PIP_EXTRA_INDEX_URL',
  ],
);

const CASE_INSENSITIVE_REPORTED = new Set(['HTTP_PROXY', 'HTTPS_PROXY', 'ALL_PROXY', 'NO_PROXY', 'NPM_CONFIG_*']);

/** A list of names where an entry ending in `*` is a prefix. */
export interface NameList {
  readonly exact: ReadonlySet<string>;
  readonly prefixes: readonly string[];
}

export function compileNameList(entries: readonly string[]): NameList {
  const exact = new Set<string>();
  const prefixes: string[] = [];
  for (const entry of entries) {
    if (entry.endsWith('*')) prefixes.push(entry.slice(0, -1));
    else exact.add(entry);
  }
  return { exact, prefixes };
}

export function matchesNameList(list: NameList, name: string): boolean {
  if (list.exact.has(name)) return true;
  for (const prefix of list.prefixes) if (name.startsWith(prefix)) return true;
  return false;
}

const HAZARD_NAMES = compileNameList(HAZARD_CATEGORIES.flatMap((entry) => entry.names));

const REPORTED_EXACT = compileNameList(
  TRUST_REDIRECT_CATEGORY.names.filter((name) => !CASE_INSENSITIVE_REPORTED.has(name.toUpperCase())),
);
const REPORTED_ANY_CASE = compileNameList(
  TRUST_REDIRECT_CATEGORY.names
    .filter((name) => CASE_INSENSITIVE_REPORTED.has(name.toUpperCase()))
    .map((name) => name.toUpperCase()),
);

/** A bash exported function (`BASH_FUNC_f%%=() { ...; }`, or the pre-Shellshock plain form). */
const FUNCTION_VALUE = /^\s*\(\s*\)\s*\{/;

/** True for a name in section 1 (exact, or under a `*` prefix). Case-sensitive. */
export function isHazardName(name: string): boolean {
  return matchesNameList(HAZARD_NAMES, name);
}

/** The category a hazard name belongs to, if any. */
export function getHazardCategory(name: string): HazardCategory | undefined {
  return HAZARD_CATEGORIES.find((entry) => matchesNameList(compileNameList(entry.names), name));
}

/** True for a value a shell would import as a function definition. */
export function isHazardValue(value: string): boolean {
  return FUNCTION_VALUE.test(value);
}

/** True for a trust or traffic redirect (kept by default, reported). */
export function isReportedName(name: string): boolean {
  return matchesNameList(REPORTED_EXACT, name) || matchesNameList(REPORTED_ANY_CASE, name.toUpperCase());
}

/*
 * Variables that choose which program a command runs or what it loads: every hazard above, the
 * trust and traffic redirects, PATH, HOME, SHELL, XDG_* (where programs look for configuration),
 * every GIT_* variable (git reads dozens that move its repository, configuration, hooks and
 * helpers), and by convention any name ending in PATH, HOME, CONFIG, CONF, RC, OPTS, OPTIONS,
 * _DIR or _FILE (MANPATH, CARGO_HOME, GNUPGHOME, KUBECONFIG, WGETRC, MAVEN_OPTS, AWS_CONFIG_FILE,
 * DOCKER_CONFIG...). A command text that sets one of these can point an allowed program at other
 * code, so the policy reads such a text as something other than that program (policy/steering.ts).
 */
const STEERING_EXACT = new Set(['PATH', 'HOME', 'SHELL', 'ENV']);
const STEERING_PREFIXES = ['XDG_', 'GIT_'];
const STEERING_SUFFIX = /(?:PATH|HOME|CONFIG|CONF|RC|OPTS|OPTIONS|_DIR|_FILE)$/;

export function isSteeringName(name: string): boolean {
  return (
    STEERING_EXACT.has(name) ||
    STEERING_PREFIXES.some((prefix) => name.startsWith(prefix)) ||
    STEERING_SUFFIX.test(name) ||
    isHazardName(name) ||
    isReportedName(name)
  );
}
