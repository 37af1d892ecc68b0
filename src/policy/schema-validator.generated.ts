/* eslint-disable */
// @ts-nocheck
// Generated from policies/schema.json by scripts/generate-validator.js; do not edit.
export const SCHEMA_SHA256 = '155dec27d88e4c4088a1c754f78ba8799f35c1a7d92841bdfcbf3f8b25bb13cc';
export { validate20 as validate };
const schema31 = {"$schema":"https://json-schema.org/draft/2020-12/schema","$id":"urn:execgate:policy:1","title":"execgate policy","description":"What agents may run through execgate, with which secrets, in which directories, and how runs are limited and audited. Every key is optional except `version`; a key left out keeps the value of the policy this one extends, or of the embedded default.","type":"object","additionalProperties":false,"required":["version"],"properties":{"$schema":{"type":"string","description":"The JSON Schema of this file, for editors (ignored by execgate)."},"version":{"title":"the policy format version `1`","description":"The policy format version. This execgate reads version 1.","const":1},"extends":{"title":"a policy file path or a list of them","description":"Policies this one is layered on, applied in order, then this file on top. Paths are relative to this file; `execgate:NAME` names a policy shipped with execgate (`execgate:default`, `execgate:strict`, `execgate:ci`).","anyOf":[{"$ref":"#/$defs/extendsTarget"},{"type":"array","minItems":1,"maxItems":16,"items":{"$ref":"#/$defs/extendsTarget"}}]},"exec":{"$ref":"#/$defs/exec"},"cwd":{"$ref":"#/$defs/cwd"},"env":{"$ref":"#/$defs/env"},"rules":{"$ref":"#/$defs/rules"},"secrets":{"$ref":"#/$defs/secrets"},"audit":{"$ref":"#/$defs/audit"},"sandbox":{"$ref":"#/$defs/sandbox"}},"$defs":{"extendsTarget":{"title":"a policy file path (relative to this file) or `execgate:NAME`","type":"string","minLength":1,"maxLength":4096,"pattern":"^[^\\u0000]+$"},"duration":{"title":"a duration: whole milliseconds, or a number with a unit such as `500ms`, `30s`, `5m`, `2h`, `1d`","anyOf":[{"type":"integer","minimum":0,"maximum":2147483647},{"type":"string","pattern":"^[0-9]+(\\.[0-9]+)?\\s*(ms|s|m|h|d)$"}]},"size":{"title":"a size: whole bytes, or a number with a unit such as `64KiB`, `1MiB`, `2GiB`, `500KB`","anyOf":[{"type":"integer","minimum":0},{"type":"string","pattern":"^[0-9]+(\\.[0-9]+)?\\s*(B|KB|KiB|MB|MiB|GB|GiB)$"}]},"mode":{"type":"object","additionalProperties":false,"description":"One execution mode.","properties":{"allowed":{"type":"boolean","description":"Whether requests may use this mode."},"timeout":{"$ref":"#/$defs/duration","description":"The timeout a request gets when it asks for none. 0 = none (then `maxTimeout`, when set, applies)."},"maxTimeout":{"$ref":"#/$defs/duration","description":"The longest timeout a request may ask for; longer ones (and `timeout: 0`) are cut to it. 0 = no maximum."}}},"exec":{"type":"object","additionalProperties":false,"description":"Modes, timeouts, the grace period, output limits and background limits.","properties":{"modes":{"type":"object","additionalProperties":false,"properties":{"sync":{"$ref":"#/$defs/mode"},"pty":{"$ref":"#/$defs/mode"},"background":{"$ref":"#/$defs/mode"}}},"grace":{"$ref":"#/$defs/duration","description":"Time between SIGTERM and SIGKILL when a run is stopped."},"drainTimeout":{"$ref":"#/$defs/duration","description":"After the main process exits, how long to keep reading output that escaped processes may still hold open."},"output":{"type":"object","additionalProperties":false,"properties":{"maxBytes":{"$ref":"#/$defs/size","description":"Bytes of each stream kept in memory (head + tail); the middle is cut with a notice. At least 1KiB."},"maxFileBytes":{"$ref":"#/$defs/size","description":"Cap of the full (redacted) output file kept when output was cut. At least 1KiB."}}},"background":{"type":"object","additionalProperties":false,"properties":{"maxConcurrent":{"type":"integer","minimum":1,"maximum":10000,"description":"Background processes that may run at once per gateway; one more is refused."},"maxFileBytes":{"$ref":"#/$defs/size","description":"Cap of each background output file. At least 1KiB."},"ringBytes":{"$ref":"#/$defs/size","description":"Recent output kept in memory per background process. At least 1KiB."},"onClose":{"enum":["kill","keep"],"description":"What closing the gateway does with background processes still running."}}}}},"cwd":{"type":"object","additionalProperties":false,"description":"Where commands may run.","properties":{"roots":{"type":"array","maxItems":256,"uniqueItems":true,"description":"Directories a request's working directory must be inside (symlinks resolved first), and the workspace every sandboxed run may write. Empty: requests may name any directory (outside the workspace it is read-only), and the gateway's own working directory is the workspace. The temp directory itself (/tmp) cannot be one: each run gets a private one.","items":{"title":"an absolute directory path, or one starting with `~/`","type":"string","pattern":"^(/|~/|~$)[^\\u0000]*$"}}}},"envName":{"title":"a variable name, or a prefix ending in `*`","type":"string","pattern":"^[^=\\u0000*]+\\*?$"},"envNames":{"type":"array","uniqueItems":true,"maxItems":1024,"items":{"$ref":"#/$defs/envName"}},"flags":{"type":"array","minItems":1,"maxItems":64,"items":{"title":"a flag: one letter (`r`) or a long option name (`force`)","type":"string","pattern":"^[A-Za-z0-9][A-Za-z0-9-]*$"},"description":"With `command`: the command must also carry every one of these options, in any order or cluster (`flags: [r, f]` matches `rm -rf`, `rm -fr`, `rm -r -f`, `rm -Rf`, `rm --recursive --force`). A one-letter flag matches either case and the long option starting with that letter; a longer one matches that long option."},"regex":{"title":"a JavaScript regular expression","type":"string","minLength":1,"maxLength":4096},"env":{"type":"object","additionalProperties":false,"description":"How the child environment is built.","properties":{"mode":{"enum":["inherit","allowlist"],"description":"`inherit`: start from the gateway's environment (hazards stripped, secrets withheld). `allowlist`: start from HOME, LOGNAME, PATH, SHELL, TERM, USER, LANG, LC_*, TZ, TMPDIR and `allowlist`."},"allowlist":{"$ref":"#/$defs/envNames","description":"In allowlist mode, more inherited variables to copy (a trailing `*` makes a prefix)."},"allowSecrets":{"$ref":"#/$defs/envNames","description":"Secret-looking variables let through to the child anyway; their values are masked in output."},"strip":{"$ref":"#/$defs/envNames","description":"More variables to remove, on top of the built-in hazard list."},"secretNamePatterns":{"type":"array","maxItems":256,"items":{"$ref":"#/$defs/regex"},"description":"Regular expressions over variable names that mark more variables as secret (withheld)."},"secretValuePatterns":{"type":"array","maxItems":256,"items":{"$ref":"#/$defs/regex"},"description":"Regular expressions over variable values that mark more variables as secret (withheld)."},"requestable":{"$ref":"#/$defs/envNames","description":"When set, the only variables a request's `env` may set (a trailing `*` makes a prefix); any other is refused (EXECGATE_ERR_ENV_NOT_REQUESTABLE). A policy that allows only some commands should leave out HOME, PATH, XDG_* and GIT_*, which point those commands at other configuration."},"set":{"type":"object","description":"Variables set in every child, after sanitizing. A variable execgate strips as a hazard cannot be set here (load-time error).","maxProperties":1024,"propertyNames":{"title":"a variable name (no `=` or NUL)","pattern":"^[^=\\u0000]+$"},"additionalProperties":{"title":"a string value","type":"string","pattern":"^[^\\u0000]*$"}},"path":{"title":"a PATH value","type":"string","pattern":"^[^\\u0000]*$","description":"PATH for every child (replaces the inherited one)."}}},"commandWords":{"title":"a command (its first words), or a list of commands","anyOf":[{"type":"string","pattern":"\\S"},{"type":"array","minItems":1,"maxItems":256,"items":{"type":"string","pattern":"\\S"}}]},"prefixes":{"title":"a text prefix, or a list of them","anyOf":[{"type":"string","minLength":1},{"type":"array","minItems":1,"maxItems":256,"items":{"type":"string","minLength":1}}]},"ruleId":{"title":"an id: letters, digits and `. _ - : / [ ]`, starting with a letter or digit","type":"string","pattern":"^[A-Za-z0-9][A-Za-z0-9._:/\\[\\]-]{0,127}$"},"reason":{"title":"a reason shown to the caller (1 to 500 characters)","type":"string","minLength":1,"maxLength":500},"rule":{"type":"object","additionalProperties":false,"required":["action"],"description":"One command rule. Give exactly one of `command`, `prefix`, `regex`.","properties":{"id":{"$ref":"#/$defs/ruleId","description":"Shown in decisions and audit records; default FILE:rules.list[N]."},"action":{"enum":["allow","deny"],"description":"What a match decides."},"command":{"$ref":"#/$defs/commandWords","description":"Word form: a simple command in the text starts with these words (`git`, `git push`), compared after quote removal; commands behind wrappers (`sudo`, `env`, `xargs`, `find -exec`) and in code run by `sh -c` or `eval` count too. A deny rule matches when any simple command does; an allow rule only when every one does and the text was read with confidence."},"flags":{"$ref":"#/$defs/flags"},"prefix":{"$ref":"#/$defs/prefixes","description":"Prefix form: a simple command, its words joined by single spaces, starts with this text. Any (deny) / every (allow), as for `command`."},"regex":{"$ref":"#/$defs/regex","description":"A regular expression in RE2 syntax (no backreferences or lookaround) tested against the whole unresolved command text, in linear time."},"reason":{"$ref":"#/$defs/reason","description":"Why; shown to the caller when the rule denies."}},"dependentRequired":{"flags":["command"]},"oneOf":[{"required":["command"]},{"required":["prefix"]},{"required":["regex"]}]},"rules":{"type":"object","additionalProperties":false,"description":"Ordered command rules: the first rule that matches decides; when none does, `default` decides.","properties":{"default":{"enum":["allow","deny"],"description":"The decision when no rule matches."},"reason":{"$ref":"#/$defs/reason","description":"Shown to the caller when `default: deny` decides."},"uncertain":{"enum":["allow","deny"],"description":"A command text the shell reader cannot read with confidence (a command name held in a variable or built at run time, code `eval` or `sh -c` gets from a variable, a shell reading its script from a pipe, an unterminated quote): `deny` refuses it before any rule is tried; `allow` (default) lets the rules decide, with allow rules and secret restrictions failing closed on it."},"list":{"type":"array","maxItems":1024,"items":{"$ref":"#/$defs/rule"},"description":"Rules in order. Rules of an extended policy come first."}}},"refPattern":{"title":"a reference such as `secret:NAME` or `decrypt:ID` (`*` matches any characters)","type":"string","pattern":"^(secret|decrypt):[A-Za-z0-9._/*-]{1,128}$"},"restriction":{"type":"object","additionalProperties":false,"required":["ref"],"description":"Which commands may use a secret. Give exactly one of `command`, `prefix`, `regex`; every simple command must match.","properties":{"id":{"$ref":"#/$defs/ruleId"},"ref":{"anyOf":[{"$ref":"#/$defs/refPattern"},{"type":"array","minItems":1,"maxItems":256,"items":{"$ref":"#/$defs/refPattern"}}],"description":"The reference(s) this restriction applies to."},"command":{"$ref":"#/$defs/commandWords"},"flags":{"$ref":"#/$defs/flags"},"prefix":{"$ref":"#/$defs/prefixes"},"regex":{"$ref":"#/$defs/regex"},"reason":{"$ref":"#/$defs/reason"}},"dependentRequired":{"flags":["command"]},"oneOf":[{"required":["command"]},{"required":["prefix"]},{"required":["regex"]}]},"secrets":{"type":"object","additionalProperties":false,"description":"Which references may be used, by which commands, and how.","properties":{"alias":{"type":"boolean","description":"Accept the `{{secret:NAME}}` / `{{decrypt:ID}}` spelling. When false it is plain text."},"minLength":{"type":"integer","minimum":1,"maximum":1024,"description":"Shortest resolved value that may be used; shorter values are refused (they cannot be masked reliably)."},"allow":{"type":"array","maxItems":1024,"uniqueItems":true,"items":{"$ref":"#/$defs/refPattern"},"description":"References that may be used at all. A command naming any other is denied. Default: all."},"restrict":{"type":"array","maxItems":1024,"items":{"$ref":"#/$defs/restriction"},"description":"Per-reference command restrictions; all that apply to a reference must be met."},"unknown":{"enum":["literal","warn","deny"],"description":"A reference no source knows: `literal` (default) passes the token on as text; `warn` does that and logs a warning; `deny` refuses the run (EXECGATE_ERR_REF_UNKNOWN) before anything is spawned."},"bind":{"type":"array","maxItems":1024,"items":{"$ref":"#/$defs/secretBinding"},"description":"Secrets bound to the hosts they are for. A run using a bound secret may send it only there; with `delivery: inject` the run never receives the value at all (the egress proxy puts it into requests to those hosts). Lists from extended policies are combined."}}},"secretBinding":{"title":"a secret bound to hosts: `{ref: secret:NAME, hosts: [HOST, ...], delivery: env|inject, headers, query, ...}`","type":"object","additionalProperties":false,"required":["ref","hosts"],"properties":{"ref":{"title":"one reference, `secret:NAME` or `decrypt:ID` (no `*`)","type":"string","pattern":"^(secret|decrypt):[A-Za-z0-9][A-Za-z0-9._/-]{0,127}$"},"hosts":{"type":"array","maxItems":256,"items":{"$ref":"#/$defs/hostPattern"},"description":"The hosts the secret is for (at least one). They also bound what the run may reach: intersected with `sandbox.network`."},"delivery":{"enum":["env","inject"],"description":"`env` (default): the value is in the child's environment, the run gets a network namespace of its own, and every connection of the run is limited to these hosts. `inject`: the child holds a random sentinel of the same shape; the egress proxy swaps in the value only over TLS to these hosts on their port (443 when a pattern names none), only where `headers`, `query`, `cookies`, `path` and `body` allow; a sentinel anywhere else fails the request (needs the sandbox)."},"headers":{"type":"array","maxItems":64,"items":{"$ref":"#/$defs/httpToken"},"description":"`inject` only. Headers whose whole credential may be the value: bare, after `Bearer` or `token`, or as the user or password of `Basic` credentials. Default `[Authorization]`; a list replaces it (write `[Authorization, X-Api-Key]` to keep both). `Host`, `Cookie`, `Content-Length` and other headers that frame or route a request cannot be listed."},"query":{"type":"array","maxItems":64,"items":{"$ref":"#/$defs/httpToken"},"description":"`inject` only. Query parameters whose whole (decoded) value may be the value, such as `access_token`. Default none."},"cookies":{"type":"array","maxItems":64,"items":{"$ref":"#/$defs/httpToken"},"description":"`inject` only. Cookies whose whole value may be the value. Default none."},"path":{"type":"boolean","description":"`inject` only. The value may be anywhere in the request path. Default false."},"body":{"type":"boolean","description":"`inject` only. The value may be anywhere in an uncompressed request body. Default false: a body is what a server stores, and a stored value can be read back."},"methods":{"type":"array","minItems":1,"maxItems":32,"items":{"$ref":"#/$defs/httpToken"},"description":"`inject` only. Request methods the value is put into (`GET`, `POST`, ...). Default any."},"paths":{"type":"array","minItems":1,"maxItems":256,"items":{"type":"string","pattern":"^/[^\\s?#%\\\\]*$","maxLength":1024},"description":"`inject` only. Paths the value is put into: a prefix ending at a segment boundary (`/repos` covers `/repos/x`, not `/reposx`), or a glob where `*` is one segment and `**` anything. A path with dot segments or encoded slashes never matches. Default any."},"http":{"type":"array","maxItems":64,"items":{"$ref":"#/$defs/hostPattern"},"description":"`inject` only. Hosts of this binding, named exactly (no wildcard), that may receive the value over plain HTTP, on the pattern's port (80 when it names none): for a local test server. Never after a redirect that changed scheme, host or port. Default none: the value goes over TLS only."},"responses":{"enum":["decode","identity"],"description":"`inject` only. `decode` (default): compressed responses (gzip, deflate, br) from these hosts are decoded, cleaned of the value and encoded again. `identity`: the proxy asks for uncompressed responses and refuses any encoded one. A response in an encoding the proxy cannot read is refused either way."}}},"httpToken":{"title":"an HTTP token (a header, parameter or cookie name, or a method)","type":"string","pattern":"^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,256}$"},"hostPattern":{"title":"a host pattern: `api.github.com`, `*.npmjs.org`, `*`, `192.0.2.10`, `[2001:db8::1]`, each with an optional `:PORT`","type":"string","minLength":1,"maxLength":300},"network":{"type":"object","additionalProperties":false,"description":"What a sandboxed run may reach. The run has no network interface but loopback in `none` and `allowlist`; traffic leaves only through the gateway's egress proxy, which decides by host name and refuses names resolving to loopback, link-local, metadata or this host's addresses.","properties":{"mode":{"enum":["open","none","allowlist"],"description":"`open`: every host not denied; `none`: nothing leaves the run; `allowlist`: only hosts matching `allow` (and not `deny`)."},"allow":{"type":"array","maxItems":1024,"items":{"$ref":"#/$defs/hostPattern"},"description":"Host patterns that may be reached in `allowlist` mode. An IP literal is reachable (in any mode) only when a pattern names it."},"deny":{"type":"array","maxItems":1024,"items":{"$ref":"#/$defs/hostPattern"},"description":"Host patterns never reached; deny wins over allow. Lists from extended policies are combined."},"upstream":{"type":"object","additionalProperties":false,"description":"How the egress proxy's own connections leave the gateway. Default: as the gateway's own environment says (`HTTPS_PROXY` for tunnels and TLS, `HTTP_PROXY` for plain HTTP, `NO_PROXY`), with the system's CAs.","properties":{"proxy":{"type":"string","maxLength":2048,"description":"A parent proxy, `http://host:port` (credentials are better given in the gateway's `HTTPS_PROXY` than in a policy file), or `direct` to ignore the gateway's proxy variables. Its credentials never enter a sandbox."},"noProxy":{"type":"array","maxItems":1024,"items":{"type":"string","minLength":1,"maxLength":300},"description":"Hosts reached without the parent proxy, as in `NO_PROXY`: a name covers its subdomains, `*` covers everything. Default: the gateway's `NO_PROXY`."},"ca":{"type":"array","maxItems":64,"items":{"type":"string","pattern":"^/","maxLength":4096},"description":"Absolute paths of PEM files with CA certificates the proxy trusts for upstream TLS, on top of the system's (a company's private CA)."}}}}},"sandboxPath":{"title":"an absolute path, or one starting with `~/`","type":"string","pattern":"^(/|~/|~$)[^\\u0000]*$"},"sandboxPaths":{"type":"array","maxItems":1024,"uniqueItems":true,"items":{"$ref":"#/$defs/sandboxPath"}},"sandbox":{"type":"object","additionalProperties":false,"description":"The OS sandbox every run starts in (Linux: bubblewrap): its own user (no nested ones), PID, mount, IPC, UTS and network namespaces and a seccomp filter; the state directory, the audit log, the session bus and credential paths hidden; the file system read-only except the workspace (`cwd.roots`, else the gateway's working directory), a private /tmp and `filesystem.writable`; the mounts checked against the plan before the command starts.","properties":{"mode":{"enum":["required","auto","off"],"description":"`required`: a run that cannot be sandboxed is refused (EXECGATE_ERR_SANDBOX_UNAVAILABLE) and nothing runs. `auto` (default): sandboxed wherever the platform allows, otherwise the run goes ahead unsandboxed and its result, its audit record and a one-time warning say why. `off`: never sandboxed."},"helper":{"title":"an absolute path to the bubblewrap executable","type":"string","pattern":"^/[^\\u0000]*$","description":"The bubblewrap executable; default the first `bwrap` in /usr/bin, /usr/local/bin, /bin."},"network":{"anyOf":[{"enum":["none","open"],"description":"Every run gets a private network namespace with loopback only, shared by the runs of one gateway (a server one run starts on 127.0.0.1 is reachable from the next); the host's loopback services, abstract UNIX sockets (a D-Bus session bus) and the gateway's own sockets are out of reach. `open` (default): every public host through the gateway's egress proxy. `none`: nothing leaves."},{"$ref":"#/$defs/network"}],"description":"`open` or `none` (see above), or an egress policy `{mode: open|none|allowlist, allow, deny}` for the gateway's egress proxy."},"filesystem":{"type":"object","additionalProperties":false,"description":"What a run sees of the file system.","properties":{"hidden":{"$ref":"#/$defs/sandboxPaths","description":"Paths that are empty (directories) or unreadable (files) inside the sandbox. Added to the built-in credential list (~/.ssh, ~/.aws, ~/.gnupg, ~/.kube, ...) and to what is always hidden (the state directory, the audit log, the session bus). A path that does not exist is skipped."},"writable":{"$ref":"#/$defs/sandboxPaths","description":"Paths writable inside the sandbox besides the workspace (`cwd.roots`, else the gateway's working directory) and the private /tmp. Replaced whole by a policy that extends this one. A path that does not exist is skipped; a hidden path stays hidden; /tmp itself cannot be one."},"readOnly":{"$ref":"#/$defs/sandboxPaths","description":"Paths kept read-only even inside a writable root (a repository's .git/hooks, say). A path that does not exist is skipped."}}}}},"audit":{"type":"object","additionalProperties":false,"description":"The audit log: where it goes and what it records. Read when the gateway starts.","properties":{"enabled":{"type":"boolean","description":"Write the audit log (default true)."},"path":{"title":"an absolute file path, or one starting with `~/`","type":"string","pattern":"^(/|~/)[^\\u0000]*$","description":"The audit log file; default $EXECGATE_HOME/audit.log."},"destination":{"enum":["file","stdout"],"description":"`file` (default): JSON lines in `path`. `stdout`: the gateway's standard output (for a log collector); the hash chain is kept either way."},"maxBytes":{"$ref":"#/$defs/size","description":"Rotate the audit file before it would exceed this size; 0 turns rotation off. Default 64MiB."},"maxFiles":{"type":"integer","minimum":0,"maximum":100000,"description":"Rotated audit files kept (oldest removed first); 0 keeps all. Default 0."},"fsync":{"enum":["always","before-spawn","never"],"description":"When records are flushed to disk: after every record, before anything is spawned (default), or never (the OS decides)."},"fingerprints":{"type":"boolean","description":"Record a keyed fingerprint of each resolved value (never the value)."},"env":{"type":"boolean","description":"Record the names of variables removed or withheld from each run."}}}}};
const schema32 = {"title":"a policy file path (relative to this file) or `execgate:NAME`","type":"string","minLength":1,"maxLength":4096,"pattern":"^[^\\u0000]+$"};
const schema44 = {"type":"object","additionalProperties":false,"description":"Where commands may run.","properties":{"roots":{"type":"array","maxItems":256,"uniqueItems":true,"description":"Directories a request's working directory must be inside (symlinks resolved first), and the workspace every sandboxed run may write. Empty: requests may name any directory (outside the workspace it is read-only), and the gateway's own working directory is the workspace. The temp directory itself (/tmp) cannot be one: each run gets a private one.","items":{"title":"an absolute directory path, or one starting with `~/`","type":"string","pattern":"^(/|~/|~$)[^\\u0000]*$"}}}};
const func1 = Object.prototype.hasOwnProperty;
const func2 = require("ajv/dist/runtime/ucs2length").default;
const pattern4 = new RegExp("^[^\\u0000]+$", "u");
const pattern14 = new RegExp("^(/|~/|~$)[^\\u0000]*$", "u");
const schema34 = {"type":"object","additionalProperties":false,"description":"Modes, timeouts, the grace period, output limits and background limits.","properties":{"modes":{"type":"object","additionalProperties":false,"properties":{"sync":{"$ref":"#/$defs/mode"},"pty":{"$ref":"#/$defs/mode"},"background":{"$ref":"#/$defs/mode"}}},"grace":{"$ref":"#/$defs/duration","description":"Time between SIGTERM and SIGKILL when a run is stopped."},"drainTimeout":{"$ref":"#/$defs/duration","description":"After the main process exits, how long to keep reading output that escaped processes may still hold open."},"output":{"type":"object","additionalProperties":false,"properties":{"maxBytes":{"$ref":"#/$defs/size","description":"Bytes of each stream kept in memory (head + tail); the middle is cut with a notice. At least 1KiB."},"maxFileBytes":{"$ref":"#/$defs/size","description":"Cap of the full (redacted) output file kept when output was cut. At least 1KiB."}}},"background":{"type":"object","additionalProperties":false,"properties":{"maxConcurrent":{"type":"integer","minimum":1,"maximum":10000,"description":"Background processes that may run at once per gateway; one more is refused."},"maxFileBytes":{"$ref":"#/$defs/size","description":"Cap of each background output file. At least 1KiB."},"ringBytes":{"$ref":"#/$defs/size","description":"Recent output kept in memory per background process. At least 1KiB."},"onClose":{"enum":["kill","keep"],"description":"What closing the gateway does with background processes still running."}}}}};
const schema36 = {"title":"a duration: whole milliseconds, or a number with a unit such as `500ms`, `30s`, `5m`, `2h`, `1d`","anyOf":[{"type":"integer","minimum":0,"maximum":2147483647},{"type":"string","pattern":"^[0-9]+(\\.[0-9]+)?\\s*(ms|s|m|h|d)$"}]};
const schema40 = {"title":"a size: whole bytes, or a number with a unit such as `64KiB`, `1MiB`, `2GiB`, `500KB`","anyOf":[{"type":"integer","minimum":0},{"type":"string","pattern":"^[0-9]+(\\.[0-9]+)?\\s*(B|KB|KiB|MB|MiB|GB|GiB)$"}]};
const schema35 = {"type":"object","additionalProperties":false,"description":"One execution mode.","properties":{"allowed":{"type":"boolean","description":"Whether requests may use this mode."},"timeout":{"$ref":"#/$defs/duration","description":"The timeout a request gets when it asks for none. 0 = none (then `maxTimeout`, when set, applies)."},"maxTimeout":{"$ref":"#/$defs/duration","description":"The longest timeout a request may ask for; longer ones (and `timeout: 0`) are cut to it. 0 = no maximum."}}};
const pattern6 = new RegExp("^[0-9]+(\\.[0-9]+)?\\s*(ms|s|m|h|d)$", "u");

function validate22(data, {instancePath="", parentData, parentDataProperty, rootData=data, dynamicAnchors={}}={}){
let vErrors = null;
let errors = 0;
const evaluated0 = validate22.evaluated;
if(evaluated0.dynamicProps){
evaluated0.props = undefined;
}
if(evaluated0.dynamicItems){
evaluated0.items = undefined;
}
if(data && typeof data == "object" && !Array.isArray(data)){
for(const key0 in data){
if(!(((key0 === "allowed") || (key0 === "timeout")) || (key0 === "maxTimeout"))){
const err0 = {instancePath,schemaPath:"#/additionalProperties",keyword:"additionalProperties",params:{additionalProperty: key0},message:"must NOT have additional properties"};
if(vErrors === null){
vErrors = [err0];
}
else {
vErrors.push(err0);
}
errors++;
}
}
if(data.allowed !== undefined){
if(typeof data.allowed !== "boolean"){
const err1 = {instancePath:instancePath+"/allowed",schemaPath:"#/properties/allowed/type",keyword:"type",params:{type: "boolean"},message:"must be boolean"};
if(vErrors === null){
vErrors = [err1];
}
else {
vErrors.push(err1);
}
errors++;
}
}
if(data.timeout !== undefined){
let data1 = data.timeout;
const _errs6 = errors;
let valid2 = false;
const _errs7 = errors;
if(!(((typeof data1 == "number") && (!(data1 % 1) && !isNaN(data1))) && (isFinite(data1)))){
const err2 = {instancePath:instancePath+"/timeout",schemaPath:"#/$defs/duration/anyOf/0/type",keyword:"type",params:{type: "integer"},message:"must be integer"};
if(vErrors === null){
vErrors = [err2];
}
else {
vErrors.push(err2);
}
errors++;
}
if((typeof data1 == "number") && (isFinite(data1))){
if(data1 > 2147483647 || isNaN(data1)){
const err3 = {instancePath:instancePath+"/timeout",schemaPath:"#/$defs/duration/anyOf/0/maximum",keyword:"maximum",params:{comparison: "<=", limit: 2147483647},message:"must be <= 2147483647"};
if(vErrors === null){
vErrors = [err3];
}
else {
vErrors.push(err3);
}
errors++;
}
if(data1 < 0 || isNaN(data1)){
const err4 = {instancePath:instancePath+"/timeout",schemaPath:"#/$defs/duration/anyOf/0/minimum",keyword:"minimum",params:{comparison: ">=", limit: 0},message:"must be >= 0"};
if(vErrors === null){
vErrors = [err4];
}
else {
vErrors.push(err4);
}
errors++;
}
}
var _valid0 = _errs7 === errors;
valid2 = valid2 || _valid0;
const _errs9 = errors;
if(typeof data1 === "string"){
if(!pattern6.test(data1)){
const err5 = {instancePath:instancePath+"/timeout",schemaPath:"#/$defs/duration/anyOf/1/pattern",keyword:"pattern",params:{pattern: "^[0-9]+(\\.[0-9]+)?\\s*(ms|s|m|h|d)$"},message:"must match pattern \""+"^[0-9]+(\\.[0-9]+)?\\s*(ms|s|m|h|d)$"+"\""};
if(vErrors === null){
vErrors = [err5];
}
else {
vErrors.push(err5);
}
errors++;
}
}
else {
const err6 = {instancePath:instancePath+"/timeout",schemaPath:"#/$defs/duration/anyOf/1/type",keyword:"type",params:{type: "string"},message:"must be string"};
if(vErrors === null){
vErrors = [err6];
}
else {
vErrors.push(err6);
}
errors++;
}
var _valid0 = _errs9 === errors;
valid2 = valid2 || _valid0;
if(!valid2){
const err7 = {instancePath:instancePath+"/timeout",schemaPath:"#/$defs/duration/anyOf",keyword:"anyOf",params:{},message:"must match a schema in anyOf"};
if(vErrors === null){
vErrors = [err7];
}
else {
vErrors.push(err7);
}
errors++;
}
else {
errors = _errs6;
if(vErrors !== null){
if(_errs6){
vErrors.length = _errs6;
}
else {
vErrors = null;
}
}
}
}
if(data.maxTimeout !== undefined){
let data2 = data.maxTimeout;
const _errs13 = errors;
let valid4 = false;
const _errs14 = errors;
if(!(((typeof data2 == "number") && (!(data2 % 1) && !isNaN(data2))) && (isFinite(data2)))){
const err8 = {instancePath:instancePath+"/maxTimeout",schemaPath:"#/$defs/duration/anyOf/0/type",keyword:"type",params:{type: "integer"},message:"must be integer"};
if(vErrors === null){
vErrors = [err8];
}
else {
vErrors.push(err8);
}
errors++;
}
if((typeof data2 == "number") && (isFinite(data2))){
if(data2 > 2147483647 || isNaN(data2)){
const err9 = {instancePath:instancePath+"/maxTimeout",schemaPath:"#/$defs/duration/anyOf/0/maximum",keyword:"maximum",params:{comparison: "<=", limit: 2147483647},message:"must be <= 2147483647"};
if(vErrors === null){
vErrors = [err9];
}
else {
vErrors.push(err9);
}
errors++;
}
if(data2 < 0 || isNaN(data2)){
const err10 = {instancePath:instancePath+"/maxTimeout",schemaPath:"#/$defs/duration/anyOf/0/minimum",keyword:"minimum",params:{comparison: ">=", limit: 0},message:"must be >= 0"};
if(vErrors === null){
vErrors = [err10];
}
else {
vErrors.push(err10);
}
errors++;
}
}
var _valid1 = _errs14 === errors;
valid4 = valid4 || _valid1;
const _errs16 = errors;
if(typeof data2 === "string"){
if(!pattern6.test(data2)){
const err11 = {instancePath:instancePath+"/maxTimeout",schemaPath:"#/$defs/duration/anyOf/1/pattern",keyword:"pattern",params:{pattern: "^[0-9]+(\\.[0-9]+)?\\s*(ms|s|m|h|d)$"},message:"must match pattern \""+"^[0-9]+(\\.[0-9]+)?\\s*(ms|s|m|h|d)$"+"\""};
if(vErrors === null){
vErrors = [err11];
}
else {
vErrors.push(err11);
}
errors++;
}
}
else {
const err12 = {instancePath:instancePath+"/maxTimeout",schemaPath:"#/$defs/duration/anyOf/1/type",keyword:"type",params:{type: "string"},message:"must be string"};
if(vErrors === null){
vErrors = [err12];
}
else {
vErrors.push(err12);
}
errors++;
}
var _valid1 = _errs16 === errors;
valid4 = valid4 || _valid1;
if(!valid4){
const err13 = {instancePath:instancePath+"/maxTimeout",schemaPath:"#/$defs/duration/anyOf",keyword:"anyOf",params:{},message:"must match a schema in anyOf"};
if(vErrors === null){
vErrors = [err13];
}
else {
vErrors.push(err13);
}
errors++;
}
else {
errors = _errs13;
if(vErrors !== null){
if(_errs13){
vErrors.length = _errs13;
}
else {
vErrors = null;
}
}
}
}
}
else {
const err14 = {instancePath,schemaPath:"#/type",keyword:"type",params:{type: "object"},message:"must be object"};
if(vErrors === null){
vErrors = [err14];
}
else {
vErrors.push(err14);
}
errors++;
}
validate22.errors = vErrors;
return errors === 0;
}
validate22.evaluated = {"props":true,"dynamicProps":false,"dynamicItems":false};

const pattern10 = new RegExp("^[0-9]+(\\.[0-9]+)?\\s*(B|KB|KiB|MB|MiB|GB|GiB)$", "u");

function validate21(data, {instancePath="", parentData, parentDataProperty, rootData=data, dynamicAnchors={}}={}){
let vErrors = null;
let errors = 0;
const evaluated0 = validate21.evaluated;
if(evaluated0.dynamicProps){
evaluated0.props = undefined;
}
if(evaluated0.dynamicItems){
evaluated0.items = undefined;
}
if(data && typeof data == "object" && !Array.isArray(data)){
for(const key0 in data){
if(!(((((key0 === "modes") || (key0 === "grace")) || (key0 === "drainTimeout")) || (key0 === "output")) || (key0 === "background"))){
const err0 = {instancePath,schemaPath:"#/additionalProperties",keyword:"additionalProperties",params:{additionalProperty: key0},message:"must NOT have additional properties"};
if(vErrors === null){
vErrors = [err0];
}
else {
vErrors.push(err0);
}
errors++;
}
}
if(data.modes !== undefined){
let data0 = data.modes;
if(data0 && typeof data0 == "object" && !Array.isArray(data0)){
for(const key1 in data0){
if(!(((key1 === "sync") || (key1 === "pty")) || (key1 === "background"))){
const err1 = {instancePath:instancePath+"/modes",schemaPath:"#/properties/modes/additionalProperties",keyword:"additionalProperties",params:{additionalProperty: key1},message:"must NOT have additional properties"};
if(vErrors === null){
vErrors = [err1];
}
else {
vErrors.push(err1);
}
errors++;
}
}
if(data0.sync !== undefined){
if(!(validate22(data0.sync, {instancePath:instancePath+"/modes/sync",parentData:data0,parentDataProperty:"sync",rootData,dynamicAnchors}))){
vErrors = vErrors === null ? validate22.errors : vErrors.concat(validate22.errors);
errors = vErrors.length;
}
}
if(data0.pty !== undefined){
if(!(validate22(data0.pty, {instancePath:instancePath+"/modes/pty",parentData:data0,parentDataProperty:"pty",rootData,dynamicAnchors}))){
vErrors = vErrors === null ? validate22.errors : vErrors.concat(validate22.errors);
errors = vErrors.length;
}
}
if(data0.background !== undefined){
if(!(validate22(data0.background, {instancePath:instancePath+"/modes/background",parentData:data0,parentDataProperty:"background",rootData,dynamicAnchors}))){
vErrors = vErrors === null ? validate22.errors : vErrors.concat(validate22.errors);
errors = vErrors.length;
}
}
}
else {
const err2 = {instancePath:instancePath+"/modes",schemaPath:"#/properties/modes/type",keyword:"type",params:{type: "object"},message:"must be object"};
if(vErrors === null){
vErrors = [err2];
}
else {
vErrors.push(err2);
}
errors++;
}
}
if(data.grace !== undefined){
let data4 = data.grace;
const _errs10 = errors;
let valid3 = false;
const _errs11 = errors;
if(!(((typeof data4 == "number") && (!(data4 % 1) && !isNaN(data4))) && (isFinite(data4)))){
const err3 = {instancePath:instancePath+"/grace",schemaPath:"#/$defs/duration/anyOf/0/type",keyword:"type",params:{type: "integer"},message:"must be integer"};
if(vErrors === null){
vErrors = [err3];
}
else {
vErrors.push(err3);
}
errors++;
}
if((typeof data4 == "number") && (isFinite(data4))){
if(data4 > 2147483647 || isNaN(data4)){
const err4 = {instancePath:instancePath+"/grace",schemaPath:"#/$defs/duration/anyOf/0/maximum",keyword:"maximum",params:{comparison: "<=", limit: 2147483647},message:"must be <= 2147483647"};
if(vErrors === null){
vErrors = [err4];
}
else {
vErrors.push(err4);
}
errors++;
}
if(data4 < 0 || isNaN(data4)){
const err5 = {instancePath:instancePath+"/grace",schemaPath:"#/$defs/duration/anyOf/0/minimum",keyword:"minimum",params:{comparison: ">=", limit: 0},message:"must be >= 0"};
if(vErrors === null){
vErrors = [err5];
}
else {
vErrors.push(err5);
}
errors++;
}
}
var _valid0 = _errs11 === errors;
valid3 = valid3 || _valid0;
const _errs13 = errors;
if(typeof data4 === "string"){
if(!pattern6.test(data4)){
const err6 = {instancePath:instancePath+"/grace",schemaPath:"#/$defs/duration/anyOf/1/pattern",keyword:"pattern",params:{pattern: "^[0-9]+(\\.[0-9]+)?\\s*(ms|s|m|h|d)$"},message:"must match pattern \""+"^[0-9]+(\\.[0-9]+)?\\s*(ms|s|m|h|d)$"+"\""};
if(vErrors === null){
vErrors = [err6];
}
else {
vErrors.push(err6);
}
errors++;
}
}
else {
const err7 = {instancePath:instancePath+"/grace",schemaPath:"#/$defs/duration/anyOf/1/type",keyword:"type",params:{type: "string"},message:"must be string"};
if(vErrors === null){
vErrors = [err7];
}
else {
vErrors.push(err7);
}
errors++;
}
var _valid0 = _errs13 === errors;
valid3 = valid3 || _valid0;
if(!valid3){
const err8 = {instancePath:instancePath+"/grace",schemaPath:"#/$defs/duration/anyOf",keyword:"anyOf",params:{},message:"must match a schema in anyOf"};
if(vErrors === null){
vErrors = [err8];
}
else {
vErrors.push(err8);
}
errors++;
}
else {
errors = _errs10;
if(vErrors !== null){
if(_errs10){
vErrors.length = _errs10;
}
else {
vErrors = null;
}
}
}
}
if(data.drainTimeout !== undefined){
let data5 = data.drainTimeout;
const _errs17 = errors;
let valid5 = false;
const _errs18 = errors;
if(!(((typeof data5 == "number") && (!(data5 % 1) && !isNaN(data5))) && (isFinite(data5)))){
const err9 = {instancePath:instancePath+"/drainTimeout",schemaPath:"#/$defs/duration/anyOf/0/type",keyword:"type",params:{type: "integer"},message:"must be integer"};
if(vErrors === null){
vErrors = [err9];
}
else {
vErrors.push(err9);
}
errors++;
}
if((typeof data5 == "number") && (isFinite(data5))){
if(data5 > 2147483647 || isNaN(data5)){
const err10 = {instancePath:instancePath+"/drainTimeout",schemaPath:"#/$defs/duration/anyOf/0/maximum",keyword:"maximum",params:{comparison: "<=", limit: 2147483647},message:"must be <= 2147483647"};
if(vErrors === null){
vErrors = [err10];
}
else {
vErrors.push(err10);
}
errors++;
}
if(data5 < 0 || isNaN(data5)){
const err11 = {instancePath:instancePath+"/drainTimeout",schemaPath:"#/$defs/duration/anyOf/0/minimum",keyword:"minimum",params:{comparison: ">=", limit: 0},message:"must be >= 0"};
if(vErrors === null){
vErrors = [err11];
}
else {
vErrors.push(err11);
}
errors++;
}
}
var _valid1 = _errs18 === errors;
valid5 = valid5 || _valid1;
const _errs20 = errors;
if(typeof data5 === "string"){
if(!pattern6.test(data5)){
const err12 = {instancePath:instancePath+"/drainTimeout",schemaPath:"#/$defs/duration/anyOf/1/pattern",keyword:"pattern",params:{pattern: "^[0-9]+(\\.[0-9]+)?\\s*(ms|s|m|h|d)$"},message:"must match pattern \""+"^[0-9]+(\\.[0-9]+)?\\s*(ms|s|m|h|d)$"+"\""};
if(vErrors === null){
vErrors = [err12];
}
else {
vErrors.push(err12);
}
errors++;
}
}
else {
const err13 = {instancePath:instancePath+"/drainTimeout",schemaPath:"#/$defs/duration/anyOf/1/type",keyword:"type",params:{type: "string"},message:"must be string"};
if(vErrors === null){
vErrors = [err13];
}
else {
vErrors.push(err13);
}
errors++;
}
var _valid1 = _errs20 === errors;
valid5 = valid5 || _valid1;
if(!valid5){
const err14 = {instancePath:instancePath+"/drainTimeout",schemaPath:"#/$defs/duration/anyOf",keyword:"anyOf",params:{},message:"must match a schema in anyOf"};
if(vErrors === null){
vErrors = [err14];
}
else {
vErrors.push(err14);
}
errors++;
}
else {
errors = _errs17;
if(vErrors !== null){
if(_errs17){
vErrors.length = _errs17;
}
else {
vErrors = null;
}
}
}
}
if(data.output !== undefined){
let data6 = data.output;
if(data6 && typeof data6 == "object" && !Array.isArray(data6)){
for(const key2 in data6){
if(!((key2 === "maxBytes") || (key2 === "maxFileBytes"))){
const err15 = {instancePath:instancePath+"/output",schemaPath:"#/properties/output/additionalProperties",keyword:"additionalProperties",params:{additionalProperty: key2},message:"must NOT have additional properties"};
if(vErrors === null){
vErrors = [err15];
}
else {
vErrors.push(err15);
}
errors++;
}
}
if(data6.maxBytes !== undefined){
let data7 = data6.maxBytes;
const _errs27 = errors;
let valid8 = false;
const _errs28 = errors;
if(!(((typeof data7 == "number") && (!(data7 % 1) && !isNaN(data7))) && (isFinite(data7)))){
const err16 = {instancePath:instancePath+"/output/maxBytes",schemaPath:"#/$defs/size/anyOf/0/type",keyword:"type",params:{type: "integer"},message:"must be integer"};
if(vErrors === null){
vErrors = [err16];
}
else {
vErrors.push(err16);
}
errors++;
}
if((typeof data7 == "number") && (isFinite(data7))){
if(data7 < 0 || isNaN(data7)){
const err17 = {instancePath:instancePath+"/output/maxBytes",schemaPath:"#/$defs/size/anyOf/0/minimum",keyword:"minimum",params:{comparison: ">=", limit: 0},message:"must be >= 0"};
if(vErrors === null){
vErrors = [err17];
}
else {
vErrors.push(err17);
}
errors++;
}
}
var _valid2 = _errs28 === errors;
valid8 = valid8 || _valid2;
const _errs30 = errors;
if(typeof data7 === "string"){
if(!pattern10.test(data7)){
const err18 = {instancePath:instancePath+"/output/maxBytes",schemaPath:"#/$defs/size/anyOf/1/pattern",keyword:"pattern",params:{pattern: "^[0-9]+(\\.[0-9]+)?\\s*(B|KB|KiB|MB|MiB|GB|GiB)$"},message:"must match pattern \""+"^[0-9]+(\\.[0-9]+)?\\s*(B|KB|KiB|MB|MiB|GB|GiB)$"+"\""};
if(vErrors === null){
vErrors = [err18];
}
else {
vErrors.push(err18);
}
errors++;
}
}
else {
const err19 = {instancePath:instancePath+"/output/maxBytes",schemaPath:"#/$defs/size/anyOf/1/type",keyword:"type",params:{type: "string"},message:"must be string"};
if(vErrors === null){
vErrors = [err19];
}
else {
vErrors.push(err19);
}
errors++;
}
var _valid2 = _errs30 === errors;
valid8 = valid8 || _valid2;
if(!valid8){
const err20 = {instancePath:instancePath+"/output/maxBytes",schemaPath:"#/$defs/size/anyOf",keyword:"anyOf",params:{},message:"must match a schema in anyOf"};
if(vErrors === null){
vErrors = [err20];
}
else {
vErrors.push(err20);
}
errors++;
}
else {
errors = _errs27;
if(vErrors !== null){
if(_errs27){
vErrors.length = _errs27;
}
else {
vErrors = null;
}
}
}
}
if(data6.maxFileBytes !== undefined){
let data8 = data6.maxFileBytes;
const _errs34 = errors;
let valid10 = false;
const _errs35 = errors;
if(!(((typeof data8 == "number") && (!(data8 % 1) && !isNaN(data8))) && (isFinite(data8)))){
const err21 = {instancePath:instancePath+"/output/maxFileBytes",schemaPath:"#/$defs/size/anyOf/0/type",keyword:"type",params:{type: "integer"},message:"must be integer"};
if(vErrors === null){
vErrors = [err21];
}
else {
vErrors.push(err21);
}
errors++;
}
if((typeof data8 == "number") && (isFinite(data8))){
if(data8 < 0 || isNaN(data8)){
const err22 = {instancePath:instancePath+"/output/maxFileBytes",schemaPath:"#/$defs/size/anyOf/0/minimum",keyword:"minimum",params:{comparison: ">=", limit: 0},message:"must be >= 0"};
if(vErrors === null){
vErrors = [err22];
}
else {
vErrors.push(err22);
}
errors++;
}
}
var _valid3 = _errs35 === errors;
valid10 = valid10 || _valid3;
const _errs37 = errors;
if(typeof data8 === "string"){
if(!pattern10.test(data8)){
const err23 = {instancePath:instancePath+"/output/maxFileBytes",schemaPath:"#/$defs/size/anyOf/1/pattern",keyword:"pattern",params:{pattern: "^[0-9]+(\\.[0-9]+)?\\s*(B|KB|KiB|MB|MiB|GB|GiB)$"},message:"must match pattern \""+"^[0-9]+(\\.[0-9]+)?\\s*(B|KB|KiB|MB|MiB|GB|GiB)$"+"\""};
if(vErrors === null){
vErrors = [err23];
}
else {
vErrors.push(err23);
}
errors++;
}
}
else {
const err24 = {instancePath:instancePath+"/output/maxFileBytes",schemaPath:"#/$defs/size/anyOf/1/type",keyword:"type",params:{type: "string"},message:"must be string"};
if(vErrors === null){
vErrors = [err24];
}
else {
vErrors.push(err24);
}
errors++;
}
var _valid3 = _errs37 === errors;
valid10 = valid10 || _valid3;
if(!valid10){
const err25 = {instancePath:instancePath+"/output/maxFileBytes",schemaPath:"#/$defs/size/anyOf",keyword:"anyOf",params:{},message:"must match a schema in anyOf"};
if(vErrors === null){
vErrors = [err25];
}
else {
vErrors.push(err25);
}
errors++;
}
else {
errors = _errs34;
if(vErrors !== null){
if(_errs34){
vErrors.length = _errs34;
}
else {
vErrors = null;
}
}
}
}
}
else {
const err26 = {instancePath:instancePath+"/output",schemaPath:"#/properties/output/type",keyword:"type",params:{type: "object"},message:"must be object"};
if(vErrors === null){
vErrors = [err26];
}
else {
vErrors.push(err26);
}
errors++;
}
}
if(data.background !== undefined){
let data9 = data.background;
if(data9 && typeof data9 == "object" && !Array.isArray(data9)){
for(const key3 in data9){
if(!((((key3 === "maxConcurrent") || (key3 === "maxFileBytes")) || (key3 === "ringBytes")) || (key3 === "onClose"))){
const err27 = {instancePath:instancePath+"/background",schemaPath:"#/properties/background/additionalProperties",keyword:"additionalProperties",params:{additionalProperty: key3},message:"must NOT have additional properties"};
if(vErrors === null){
vErrors = [err27];
}
else {
vErrors.push(err27);
}
errors++;
}
}
if(data9.maxConcurrent !== undefined){
let data10 = data9.maxConcurrent;
if(!(((typeof data10 == "number") && (!(data10 % 1) && !isNaN(data10))) && (isFinite(data10)))){
const err28 = {instancePath:instancePath+"/background/maxConcurrent",schemaPath:"#/properties/background/properties/maxConcurrent/type",keyword:"type",params:{type: "integer"},message:"must be integer"};
if(vErrors === null){
vErrors = [err28];
}
else {
vErrors.push(err28);
}
errors++;
}
if((typeof data10 == "number") && (isFinite(data10))){
if(data10 > 10000 || isNaN(data10)){
const err29 = {instancePath:instancePath+"/background/maxConcurrent",schemaPath:"#/properties/background/properties/maxConcurrent/maximum",keyword:"maximum",params:{comparison: "<=", limit: 10000},message:"must be <= 10000"};
if(vErrors === null){
vErrors = [err29];
}
else {
vErrors.push(err29);
}
errors++;
}
if(data10 < 1 || isNaN(data10)){
const err30 = {instancePath:instancePath+"/background/maxConcurrent",schemaPath:"#/properties/background/properties/maxConcurrent/minimum",keyword:"minimum",params:{comparison: ">=", limit: 1},message:"must be >= 1"};
if(vErrors === null){
vErrors = [err30];
}
else {
vErrors.push(err30);
}
errors++;
}
}
}
if(data9.maxFileBytes !== undefined){
let data11 = data9.maxFileBytes;
const _errs46 = errors;
let valid13 = false;
const _errs47 = errors;
if(!(((typeof data11 == "number") && (!(data11 % 1) && !isNaN(data11))) && (isFinite(data11)))){
const err31 = {instancePath:instancePath+"/background/maxFileBytes",schemaPath:"#/$defs/size/anyOf/0/type",keyword:"type",params:{type: "integer"},message:"must be integer"};
if(vErrors === null){
vErrors = [err31];
}
else {
vErrors.push(err31);
}
errors++;
}
if((typeof data11 == "number") && (isFinite(data11))){
if(data11 < 0 || isNaN(data11)){
const err32 = {instancePath:instancePath+"/background/maxFileBytes",schemaPath:"#/$defs/size/anyOf/0/minimum",keyword:"minimum",params:{comparison: ">=", limit: 0},message:"must be >= 0"};
if(vErrors === null){
vErrors = [err32];
}
else {
vErrors.push(err32);
}
errors++;
}
}
var _valid4 = _errs47 === errors;
valid13 = valid13 || _valid4;
const _errs49 = errors;
if(typeof data11 === "string"){
if(!pattern10.test(data11)){
const err33 = {instancePath:instancePath+"/background/maxFileBytes",schemaPath:"#/$defs/size/anyOf/1/pattern",keyword:"pattern",params:{pattern: "^[0-9]+(\\.[0-9]+)?\\s*(B|KB|KiB|MB|MiB|GB|GiB)$"},message:"must match pattern \""+"^[0-9]+(\\.[0-9]+)?\\s*(B|KB|KiB|MB|MiB|GB|GiB)$"+"\""};
if(vErrors === null){
vErrors = [err33];
}
else {
vErrors.push(err33);
}
errors++;
}
}
else {
const err34 = {instancePath:instancePath+"/background/maxFileBytes",schemaPath:"#/$defs/size/anyOf/1/type",keyword:"type",params:{type: "string"},message:"must be string"};
if(vErrors === null){
vErrors = [err34];
}
else {
vErrors.push(err34);
}
errors++;
}
var _valid4 = _errs49 === errors;
valid13 = valid13 || _valid4;
if(!valid13){
const err35 = {instancePath:instancePath+"/background/maxFileBytes",schemaPath:"#/$defs/size/anyOf",keyword:"anyOf",params:{},message:"must match a schema in anyOf"};
if(vErrors === null){
vErrors = [err35];
}
else {
vErrors.push(err35);
}
errors++;
}
else {
errors = _errs46;
if(vErrors !== null){
if(_errs46){
vErrors.length = _errs46;
}
else {
vErrors = null;
}
}
}
}
if(data9.ringBytes !== undefined){
let data12 = data9.ringBytes;
const _errs53 = errors;
let valid15 = false;
const _errs54 = errors;
if(!(((typeof data12 == "number") && (!(data12 % 1) && !isNaN(data12))) && (isFinite(data12)))){
const err36 = {instancePath:instancePath+"/background/ringBytes",schemaPath:"#/$defs/size/anyOf/0/type",keyword:"type",params:{type: "integer"},message:"must be integer"};
if(vErrors === null){
vErrors = [err36];
}
else {
vErrors.push(err36);
}
errors++;
}
if((typeof data12 == "number") && (isFinite(data12))){
if(data12 < 0 || isNaN(data12)){
const err37 = {instancePath:instancePath+"/background/ringBytes",schemaPath:"#/$defs/size/anyOf/0/minimum",keyword:"minimum",params:{comparison: ">=", limit: 0},message:"must be >= 0"};
if(vErrors === null){
vErrors = [err37];
}
else {
vErrors.push(err37);
}
errors++;
}
}
var _valid5 = _errs54 === errors;
valid15 = valid15 || _valid5;
const _errs56 = errors;
if(typeof data12 === "string"){
if(!pattern10.test(data12)){
const err38 = {instancePath:instancePath+"/background/ringBytes",schemaPath:"#/$defs/size/anyOf/1/pattern",keyword:"pattern",params:{pattern: "^[0-9]+(\\.[0-9]+)?\\s*(B|KB|KiB|MB|MiB|GB|GiB)$"},message:"must match pattern \""+"^[0-9]+(\\.[0-9]+)?\\s*(B|KB|KiB|MB|MiB|GB|GiB)$"+"\""};
if(vErrors === null){
vErrors = [err38];
}
else {
vErrors.push(err38);
}
errors++;
}
}
else {
const err39 = {instancePath:instancePath+"/background/ringBytes",schemaPath:"#/$defs/size/anyOf/1/type",keyword:"type",params:{type: "string"},message:"must be string"};
if(vErrors === null){
vErrors = [err39];
}
else {
vErrors.push(err39);
}
errors++;
}
var _valid5 = _errs56 === errors;
valid15 = valid15 || _valid5;
if(!valid15){
const err40 = {instancePath:instancePath+"/background/ringBytes",schemaPath:"#/$defs/size/anyOf",keyword:"anyOf",params:{},message:"must match a schema in anyOf"};
if(vErrors === null){
vErrors = [err40];
}
else {
vErrors.push(err40);
}
errors++;
}
else {
errors = _errs53;
if(vErrors !== null){
if(_errs53){
vErrors.length = _errs53;
}
else {
vErrors = null;
}
}
}
}
if(data9.onClose !== undefined){
let data13 = data9.onClose;
if(!((data13 === "kill") || (data13 === "keep"))){
const err41 = {instancePath:instancePath+"/background/onClose",schemaPath:"#/properties/background/properties/onClose/enum",keyword:"enum",params:{allowedValues: schema34.properties.background.properties.onClose.enum},message:"must be equal to one of the allowed values"};
if(vErrors === null){
vErrors = [err41];
}
else {
vErrors.push(err41);
}
errors++;
}
}
}
else {
const err42 = {instancePath:instancePath+"/background",schemaPath:"#/properties/background/type",keyword:"type",params:{type: "object"},message:"must be object"};
if(vErrors === null){
vErrors = [err42];
}
else {
vErrors.push(err42);
}
errors++;
}
}
}
else {
const err43 = {instancePath,schemaPath:"#/type",keyword:"type",params:{type: "object"},message:"must be object"};
if(vErrors === null){
vErrors = [err43];
}
else {
vErrors.push(err43);
}
errors++;
}
validate21.errors = vErrors;
return errors === 0;
}
validate21.evaluated = {"props":true,"dynamicProps":false,"dynamicItems":false};

const schema45 = {"type":"object","additionalProperties":false,"description":"How the child environment is built.","properties":{"mode":{"enum":["inherit","allowlist"],"description":"`inherit`: start from the gateway's environment (hazards stripped, secrets withheld). `allowlist`: start from HOME, LOGNAME, PATH, SHELL, TERM, USER, LANG, LC_*, TZ, TMPDIR and `allowlist`."},"allowlist":{"$ref":"#/$defs/envNames","description":"In allowlist mode, more inherited variables to copy (a trailing `*` makes a prefix)."},"allowSecrets":{"$ref":"#/$defs/envNames","description":"Secret-looking variables let through to the child anyway; their values are masked in output."},"strip":{"$ref":"#/$defs/envNames","description":"More variables to remove, on top of the built-in hazard list."},"secretNamePatterns":{"type":"array","maxItems":256,"items":{"$ref":"#/$defs/regex"},"description":"Regular expressions over variable names that mark more variables as secret (withheld)."},"secretValuePatterns":{"type":"array","maxItems":256,"items":{"$ref":"#/$defs/regex"},"description":"Regular expressions over variable values that mark more variables as secret (withheld)."},"requestable":{"$ref":"#/$defs/envNames","description":"When set, the only variables a request's `env` may set (a trailing `*` makes a prefix); any other is refused (EXECGATE_ERR_ENV_NOT_REQUESTABLE). A policy that allows only some commands should leave out HOME, PATH, XDG_* and GIT_*, which point those commands at other configuration."},"set":{"type":"object","description":"Variables set in every child, after sanitizing. A variable execgate strips as a hazard cannot be set here (load-time error).","maxProperties":1024,"propertyNames":{"title":"a variable name (no `=` or NUL)","pattern":"^[^=\\u0000]+$"},"additionalProperties":{"title":"a string value","type":"string","pattern":"^[^\\u0000]*$"}},"path":{"title":"a PATH value","type":"string","pattern":"^[^\\u0000]*$","description":"PATH for every child (replaces the inherited one)."}}};
const schema48 = {"title":"a JavaScript regular expression","type":"string","minLength":1,"maxLength":4096};
const schema46 = {"type":"array","uniqueItems":true,"maxItems":1024,"items":{"$ref":"#/$defs/envName"}};
const schema47 = {"title":"a variable name, or a prefix ending in `*`","type":"string","pattern":"^[^=\\u0000*]+\\*?$"};
const pattern15 = new RegExp("^[^=\\u0000*]+\\*?$", "u");
const func0 = require("ajv/dist/runtime/equal").default;

function validate28(data, {instancePath="", parentData, parentDataProperty, rootData=data, dynamicAnchors={}}={}){
let vErrors = null;
let errors = 0;
const evaluated0 = validate28.evaluated;
if(evaluated0.dynamicProps){
evaluated0.props = undefined;
}
if(evaluated0.dynamicItems){
evaluated0.items = undefined;
}
if(Array.isArray(data)){
if(data.length > 1024){
const err0 = {instancePath,schemaPath:"#/maxItems",keyword:"maxItems",params:{limit: 1024},message:"must NOT have more than 1024 items"};
if(vErrors === null){
vErrors = [err0];
}
else {
vErrors.push(err0);
}
errors++;
}
const len0 = data.length;
for(let i0=0; i0<len0; i0++){
let data0 = data[i0];
if(typeof data0 === "string"){
if(!pattern15.test(data0)){
const err1 = {instancePath:instancePath+"/" + i0,schemaPath:"#/$defs/envName/pattern",keyword:"pattern",params:{pattern: "^[^=\\u0000*]+\\*?$"},message:"must match pattern \""+"^[^=\\u0000*]+\\*?$"+"\""};
if(vErrors === null){
vErrors = [err1];
}
else {
vErrors.push(err1);
}
errors++;
}
}
else {
const err2 = {instancePath:instancePath+"/" + i0,schemaPath:"#/$defs/envName/type",keyword:"type",params:{type: "string"},message:"must be string"};
if(vErrors === null){
vErrors = [err2];
}
else {
vErrors.push(err2);
}
errors++;
}
}
let i1 = data.length;
let j0;
if(i1 > 1){
outer0:
for(;i1--;){
for(j0 = i1; j0--;){
if(func0(data[i1], data[j0])){
const err3 = {instancePath,schemaPath:"#/uniqueItems",keyword:"uniqueItems",params:{i: i1, j: j0},message:"must NOT have duplicate items (items ## "+j0+" and "+i1+" are identical)"};
if(vErrors === null){
vErrors = [err3];
}
else {
vErrors.push(err3);
}
errors++;
break outer0;
}
}
}
}
}
else {
const err4 = {instancePath,schemaPath:"#/type",keyword:"type",params:{type: "array"},message:"must be array"};
if(vErrors === null){
vErrors = [err4];
}
else {
vErrors.push(err4);
}
errors++;
}
validate28.errors = vErrors;
return errors === 0;
}
validate28.evaluated = {"items":true,"dynamicProps":false,"dynamicItems":false};

const pattern16 = new RegExp("^[^=\\u0000]+$", "u");
const pattern17 = new RegExp("^[^\\u0000]*$", "u");

function validate27(data, {instancePath="", parentData, parentDataProperty, rootData=data, dynamicAnchors={}}={}){
let vErrors = null;
let errors = 0;
const evaluated0 = validate27.evaluated;
if(evaluated0.dynamicProps){
evaluated0.props = undefined;
}
if(evaluated0.dynamicItems){
evaluated0.items = undefined;
}
if(data && typeof data == "object" && !Array.isArray(data)){
for(const key0 in data){
if(!(func1.call(schema45.properties, key0))){
const err0 = {instancePath,schemaPath:"#/additionalProperties",keyword:"additionalProperties",params:{additionalProperty: key0},message:"must NOT have additional properties"};
if(vErrors === null){
vErrors = [err0];
}
else {
vErrors.push(err0);
}
errors++;
}
}
if(data.mode !== undefined){
let data0 = data.mode;
if(!((data0 === "inherit") || (data0 === "allowlist"))){
const err1 = {instancePath:instancePath+"/mode",schemaPath:"#/properties/mode/enum",keyword:"enum",params:{allowedValues: schema45.properties.mode.enum},message:"must be equal to one of the allowed values"};
if(vErrors === null){
vErrors = [err1];
}
else {
vErrors.push(err1);
}
errors++;
}
}
if(data.allowlist !== undefined){
if(!(validate28(data.allowlist, {instancePath:instancePath+"/allowlist",parentData:data,parentDataProperty:"allowlist",rootData,dynamicAnchors}))){
vErrors = vErrors === null ? validate28.errors : vErrors.concat(validate28.errors);
errors = vErrors.length;
}
}
if(data.allowSecrets !== undefined){
if(!(validate28(data.allowSecrets, {instancePath:instancePath+"/allowSecrets",parentData:data,parentDataProperty:"allowSecrets",rootData,dynamicAnchors}))){
vErrors = vErrors === null ? validate28.errors : vErrors.concat(validate28.errors);
errors = vErrors.length;
}
}
if(data.strip !== undefined){
if(!(validate28(data.strip, {instancePath:instancePath+"/strip",parentData:data,parentDataProperty:"strip",rootData,dynamicAnchors}))){
vErrors = vErrors === null ? validate28.errors : vErrors.concat(validate28.errors);
errors = vErrors.length;
}
}
if(data.secretNamePatterns !== undefined){
let data4 = data.secretNamePatterns;
if(Array.isArray(data4)){
if(data4.length > 256){
const err2 = {instancePath:instancePath+"/secretNamePatterns",schemaPath:"#/properties/secretNamePatterns/maxItems",keyword:"maxItems",params:{limit: 256},message:"must NOT have more than 256 items"};
if(vErrors === null){
vErrors = [err2];
}
else {
vErrors.push(err2);
}
errors++;
}
const len0 = data4.length;
for(let i0=0; i0<len0; i0++){
let data5 = data4[i0];
if(typeof data5 === "string"){
if(func2(data5) > 4096){
const err3 = {instancePath:instancePath+"/secretNamePatterns/" + i0,schemaPath:"#/$defs/regex/maxLength",keyword:"maxLength",params:{limit: 4096},message:"must NOT have more than 4096 characters"};
if(vErrors === null){
vErrors = [err3];
}
else {
vErrors.push(err3);
}
errors++;
}
if(func2(data5) < 1){
const err4 = {instancePath:instancePath+"/secretNamePatterns/" + i0,schemaPath:"#/$defs/regex/minLength",keyword:"minLength",params:{limit: 1},message:"must NOT have fewer than 1 characters"};
if(vErrors === null){
vErrors = [err4];
}
else {
vErrors.push(err4);
}
errors++;
}
}
else {
const err5 = {instancePath:instancePath+"/secretNamePatterns/" + i0,schemaPath:"#/$defs/regex/type",keyword:"type",params:{type: "string"},message:"must be string"};
if(vErrors === null){
vErrors = [err5];
}
else {
vErrors.push(err5);
}
errors++;
}
}
}
else {
const err6 = {instancePath:instancePath+"/secretNamePatterns",schemaPath:"#/properties/secretNamePatterns/type",keyword:"type",params:{type: "array"},message:"must be array"};
if(vErrors === null){
vErrors = [err6];
}
else {
vErrors.push(err6);
}
errors++;
}
}
if(data.secretValuePatterns !== undefined){
let data6 = data.secretValuePatterns;
if(Array.isArray(data6)){
if(data6.length > 256){
const err7 = {instancePath:instancePath+"/secretValuePatterns",schemaPath:"#/properties/secretValuePatterns/maxItems",keyword:"maxItems",params:{limit: 256},message:"must NOT have more than 256 items"};
if(vErrors === null){
vErrors = [err7];
}
else {
vErrors.push(err7);
}
errors++;
}
const len1 = data6.length;
for(let i1=0; i1<len1; i1++){
let data7 = data6[i1];
if(typeof data7 === "string"){
if(func2(data7) > 4096){
const err8 = {instancePath:instancePath+"/secretValuePatterns/" + i1,schemaPath:"#/$defs/regex/maxLength",keyword:"maxLength",params:{limit: 4096},message:"must NOT have more than 4096 characters"};
if(vErrors === null){
vErrors = [err8];
}
else {
vErrors.push(err8);
}
errors++;
}
if(func2(data7) < 1){
const err9 = {instancePath:instancePath+"/secretValuePatterns/" + i1,schemaPath:"#/$defs/regex/minLength",keyword:"minLength",params:{limit: 1},message:"must NOT have fewer than 1 characters"};
if(vErrors === null){
vErrors = [err9];
}
else {
vErrors.push(err9);
}
errors++;
}
}
else {
const err10 = {instancePath:instancePath+"/secretValuePatterns/" + i1,schemaPath:"#/$defs/regex/type",keyword:"type",params:{type: "string"},message:"must be string"};
if(vErrors === null){
vErrors = [err10];
}
else {
vErrors.push(err10);
}
errors++;
}
}
}
else {
const err11 = {instancePath:instancePath+"/secretValuePatterns",schemaPath:"#/properties/secretValuePatterns/type",keyword:"type",params:{type: "array"},message:"must be array"};
if(vErrors === null){
vErrors = [err11];
}
else {
vErrors.push(err11);
}
errors++;
}
}
if(data.requestable !== undefined){
if(!(validate28(data.requestable, {instancePath:instancePath+"/requestable",parentData:data,parentDataProperty:"requestable",rootData,dynamicAnchors}))){
vErrors = vErrors === null ? validate28.errors : vErrors.concat(validate28.errors);
errors = vErrors.length;
}
}
if(data.set !== undefined){
let data9 = data.set;
if(data9 && typeof data9 == "object" && !Array.isArray(data9)){
if(Object.keys(data9).length > 1024){
const err12 = {instancePath:instancePath+"/set",schemaPath:"#/properties/set/maxProperties",keyword:"maxProperties",params:{limit: 1024},message:"must NOT have more than 1024 properties"};
if(vErrors === null){
vErrors = [err12];
}
else {
vErrors.push(err12);
}
errors++;
}
for(const key1 in data9){
const _errs19 = errors;
if(typeof key1 === "string"){
if(!pattern16.test(key1)){
const err13 = {instancePath:instancePath+"/set",schemaPath:"#/properties/set/propertyNames/pattern",keyword:"pattern",params:{pattern: "^[^=\\u0000]+$"},message:"must match pattern \""+"^[^=\\u0000]+$"+"\"",propertyName:key1};
if(vErrors === null){
vErrors = [err13];
}
else {
vErrors.push(err13);
}
errors++;
}
}
var valid7 = _errs19 === errors;
if(!valid7){
const err14 = {instancePath:instancePath+"/set",schemaPath:"#/properties/set/propertyNames",keyword:"propertyNames",params:{propertyName: key1},message:"property name must be valid"};
if(vErrors === null){
vErrors = [err14];
}
else {
vErrors.push(err14);
}
errors++;
}
}
for(const key2 in data9){
let data10 = data9[key2];
if(typeof data10 === "string"){
if(!pattern17.test(data10)){
const err15 = {instancePath:instancePath+"/set/" + key2.replace(/~/g, "~0").replace(/\//g, "~1"),schemaPath:"#/properties/set/additionalProperties/pattern",keyword:"pattern",params:{pattern: "^[^\\u0000]*$"},message:"must match pattern \""+"^[^\\u0000]*$"+"\""};
if(vErrors === null){
vErrors = [err15];
}
else {
vErrors.push(err15);
}
errors++;
}
}
else {
const err16 = {instancePath:instancePath+"/set/" + key2.replace(/~/g, "~0").replace(/\//g, "~1"),schemaPath:"#/properties/set/additionalProperties/type",keyword:"type",params:{type: "string"},message:"must be string"};
if(vErrors === null){
vErrors = [err16];
}
else {
vErrors.push(err16);
}
errors++;
}
}
}
else {
const err17 = {instancePath:instancePath+"/set",schemaPath:"#/properties/set/type",keyword:"type",params:{type: "object"},message:"must be object"};
if(vErrors === null){
vErrors = [err17];
}
else {
vErrors.push(err17);
}
errors++;
}
}
if(data.path !== undefined){
let data11 = data.path;
if(typeof data11 === "string"){
if(!pattern17.test(data11)){
const err18 = {instancePath:instancePath+"/path",schemaPath:"#/properties/path/pattern",keyword:"pattern",params:{pattern: "^[^\\u0000]*$"},message:"must match pattern \""+"^[^\\u0000]*$"+"\""};
if(vErrors === null){
vErrors = [err18];
}
else {
vErrors.push(err18);
}
errors++;
}
}
else {
const err19 = {instancePath:instancePath+"/path",schemaPath:"#/properties/path/type",keyword:"type",params:{type: "string"},message:"must be string"};
if(vErrors === null){
vErrors = [err19];
}
else {
vErrors.push(err19);
}
errors++;
}
}
}
else {
const err20 = {instancePath,schemaPath:"#/type",keyword:"type",params:{type: "object"},message:"must be object"};
if(vErrors === null){
vErrors = [err20];
}
else {
vErrors.push(err20);
}
errors++;
}
validate27.errors = vErrors;
return errors === 0;
}
validate27.evaluated = {"props":true,"dynamicProps":false,"dynamicItems":false};

const schema50 = {"type":"object","additionalProperties":false,"description":"Ordered command rules: the first rule that matches decides; when none does, `default` decides.","properties":{"default":{"enum":["allow","deny"],"description":"The decision when no rule matches."},"reason":{"$ref":"#/$defs/reason","description":"Shown to the caller when `default: deny` decides."},"uncertain":{"enum":["allow","deny"],"description":"A command text the shell reader cannot read with confidence (a command name held in a variable or built at run time, code `eval` or `sh -c` gets from a variable, a shell reading its script from a pipe, an unterminated quote): `deny` refuses it before any rule is tried; `allow` (default) lets the rules decide, with allow rules and secret restrictions failing closed on it."},"list":{"type":"array","maxItems":1024,"items":{"$ref":"#/$defs/rule"},"description":"Rules in order. Rules of an extended policy come first."}}};
const schema51 = {"title":"a reason shown to the caller (1 to 500 characters)","type":"string","minLength":1,"maxLength":500};
const schema52 = {"type":"object","additionalProperties":false,"required":["action"],"description":"One command rule. Give exactly one of `command`, `prefix`, `regex`.","properties":{"id":{"$ref":"#/$defs/ruleId","description":"Shown in decisions and audit records; default FILE:rules.list[N]."},"action":{"enum":["allow","deny"],"description":"What a match decides."},"command":{"$ref":"#/$defs/commandWords","description":"Word form: a simple command in the text starts with these words (`git`, `git push`), compared after quote removal; commands behind wrappers (`sudo`, `env`, `xargs`, `find -exec`) and in code run by `sh -c` or `eval` count too. A deny rule matches when any simple command does; an allow rule only when every one does and the text was read with confidence."},"flags":{"$ref":"#/$defs/flags"},"prefix":{"$ref":"#/$defs/prefixes","description":"Prefix form: a simple command, its words joined by single spaces, starts with this text. Any (deny) / every (allow), as for `command`."},"regex":{"$ref":"#/$defs/regex","description":"A regular expression in RE2 syntax (no backreferences or lookaround) tested against the whole unresolved command text, in linear time."},"reason":{"$ref":"#/$defs/reason","description":"Why; shown to the caller when the rule denies."}},"dependentRequired":{"flags":["command"]},"oneOf":[{"required":["command"]},{"required":["prefix"]},{"required":["regex"]}]};
const schema53 = {"title":"an id: letters, digits and `. _ - : / [ ]`, starting with a letter or digit","type":"string","pattern":"^[A-Za-z0-9][A-Za-z0-9._:/\\[\\]-]{0,127}$"};
const schema54 = {"title":"a command (its first words), or a list of commands","anyOf":[{"type":"string","pattern":"\\S"},{"type":"array","minItems":1,"maxItems":256,"items":{"type":"string","pattern":"\\S"}}]};
const schema55 = {"type":"array","minItems":1,"maxItems":64,"items":{"title":"a flag: one letter (`r`) or a long option name (`force`)","type":"string","pattern":"^[A-Za-z0-9][A-Za-z0-9-]*$"},"description":"With `command`: the command must also carry every one of these options, in any order or cluster (`flags: [r, f]` matches `rm -rf`, `rm -fr`, `rm -r -f`, `rm -Rf`, `rm --recursive --force`). A one-letter flag matches either case and the long option starting with that letter; a longer one matches that long option."};
const schema56 = {"title":"a text prefix, or a list of them","anyOf":[{"type":"string","minLength":1},{"type":"array","minItems":1,"maxItems":256,"items":{"type":"string","minLength":1}}]};
const pattern19 = new RegExp("^[A-Za-z0-9][A-Za-z0-9._:/\\[\\]-]{0,127}$", "u");
const pattern20 = new RegExp("\\S", "u");
const pattern22 = new RegExp("^[A-Za-z0-9][A-Za-z0-9-]*$", "u");

function validate35(data, {instancePath="", parentData, parentDataProperty, rootData=data, dynamicAnchors={}}={}){
let vErrors = null;
let errors = 0;
const evaluated0 = validate35.evaluated;
if(evaluated0.dynamicProps){
evaluated0.props = undefined;
}
if(evaluated0.dynamicItems){
evaluated0.items = undefined;
}
const _errs1 = errors;
let valid0 = false;
let passing0 = null;
const _errs2 = errors;
if(data && typeof data == "object" && !Array.isArray(data)){
if(data.command === undefined){
const err0 = {instancePath,schemaPath:"#/oneOf/0/required",keyword:"required",params:{missingProperty: "command"},message:"must have required property '"+"command"+"'"};
if(vErrors === null){
vErrors = [err0];
}
else {
vErrors.push(err0);
}
errors++;
}
}
var _valid0 = _errs2 === errors;
if(_valid0){
valid0 = true;
passing0 = 0;
}
const _errs3 = errors;
if(data && typeof data == "object" && !Array.isArray(data)){
if(data.prefix === undefined){
const err1 = {instancePath,schemaPath:"#/oneOf/1/required",keyword:"required",params:{missingProperty: "prefix"},message:"must have required property '"+"prefix"+"'"};
if(vErrors === null){
vErrors = [err1];
}
else {
vErrors.push(err1);
}
errors++;
}
}
var _valid0 = _errs3 === errors;
if(_valid0 && valid0){
valid0 = false;
passing0 = [passing0, 1];
}
else {
if(_valid0){
valid0 = true;
passing0 = 1;
}
const _errs4 = errors;
if(data && typeof data == "object" && !Array.isArray(data)){
if(data.regex === undefined){
const err2 = {instancePath,schemaPath:"#/oneOf/2/required",keyword:"required",params:{missingProperty: "regex"},message:"must have required property '"+"regex"+"'"};
if(vErrors === null){
vErrors = [err2];
}
else {
vErrors.push(err2);
}
errors++;
}
}
var _valid0 = _errs4 === errors;
if(_valid0 && valid0){
valid0 = false;
passing0 = [passing0, 2];
}
else {
if(_valid0){
valid0 = true;
passing0 = 2;
}
}
}
if(!valid0){
const err3 = {instancePath,schemaPath:"#/oneOf",keyword:"oneOf",params:{passingSchemas: passing0},message:"must match exactly one schema in oneOf"};
if(vErrors === null){
vErrors = [err3];
}
else {
vErrors.push(err3);
}
errors++;
}
else {
errors = _errs1;
if(vErrors !== null){
if(_errs1){
vErrors.length = _errs1;
}
else {
vErrors = null;
}
}
}
if(data && typeof data == "object" && !Array.isArray(data)){
if(data.action === undefined){
const err4 = {instancePath,schemaPath:"#/required",keyword:"required",params:{missingProperty: "action"},message:"must have required property '"+"action"+"'"};
if(vErrors === null){
vErrors = [err4];
}
else {
vErrors.push(err4);
}
errors++;
}
for(const key0 in data){
if(!(((((((key0 === "id") || (key0 === "action")) || (key0 === "command")) || (key0 === "flags")) || (key0 === "prefix")) || (key0 === "regex")) || (key0 === "reason"))){
const err5 = {instancePath,schemaPath:"#/additionalProperties",keyword:"additionalProperties",params:{additionalProperty: key0},message:"must NOT have additional properties"};
if(vErrors === null){
vErrors = [err5];
}
else {
vErrors.push(err5);
}
errors++;
}
}
if(data.id !== undefined){
let data0 = data.id;
if(typeof data0 === "string"){
if(!pattern19.test(data0)){
const err6 = {instancePath:instancePath+"/id",schemaPath:"#/$defs/ruleId/pattern",keyword:"pattern",params:{pattern: "^[A-Za-z0-9][A-Za-z0-9._:/\\[\\]-]{0,127}$"},message:"must match pattern \""+"^[A-Za-z0-9][A-Za-z0-9._:/\\[\\]-]{0,127}$"+"\""};
if(vErrors === null){
vErrors = [err6];
}
else {
vErrors.push(err6);
}
errors++;
}
}
else {
const err7 = {instancePath:instancePath+"/id",schemaPath:"#/$defs/ruleId/type",keyword:"type",params:{type: "string"},message:"must be string"};
if(vErrors === null){
vErrors = [err7];
}
else {
vErrors.push(err7);
}
errors++;
}
}
if(data.action !== undefined){
let data1 = data.action;
if(!((data1 === "allow") || (data1 === "deny"))){
const err8 = {instancePath:instancePath+"/action",schemaPath:"#/properties/action/enum",keyword:"enum",params:{allowedValues: schema52.properties.action.enum},message:"must be equal to one of the allowed values"};
if(vErrors === null){
vErrors = [err8];
}
else {
vErrors.push(err8);
}
errors++;
}
}
if(data.command !== undefined){
let data2 = data.command;
const _errs12 = errors;
let valid4 = false;
const _errs13 = errors;
if(typeof data2 === "string"){
if(!pattern20.test(data2)){
const err9 = {instancePath:instancePath+"/command",schemaPath:"#/$defs/commandWords/anyOf/0/pattern",keyword:"pattern",params:{pattern: "\\S"},message:"must match pattern \""+"\\S"+"\""};
if(vErrors === null){
vErrors = [err9];
}
else {
vErrors.push(err9);
}
errors++;
}
}
else {
const err10 = {instancePath:instancePath+"/command",schemaPath:"#/$defs/commandWords/anyOf/0/type",keyword:"type",params:{type: "string"},message:"must be string"};
if(vErrors === null){
vErrors = [err10];
}
else {
vErrors.push(err10);
}
errors++;
}
var _valid1 = _errs13 === errors;
valid4 = valid4 || _valid1;
const _errs15 = errors;
if(Array.isArray(data2)){
if(data2.length > 256){
const err11 = {instancePath:instancePath+"/command",schemaPath:"#/$defs/commandWords/anyOf/1/maxItems",keyword:"maxItems",params:{limit: 256},message:"must NOT have more than 256 items"};
if(vErrors === null){
vErrors = [err11];
}
else {
vErrors.push(err11);
}
errors++;
}
if(data2.length < 1){
const err12 = {instancePath:instancePath+"/command",schemaPath:"#/$defs/commandWords/anyOf/1/minItems",keyword:"minItems",params:{limit: 1},message:"must NOT have fewer than 1 items"};
if(vErrors === null){
vErrors = [err12];
}
else {
vErrors.push(err12);
}
errors++;
}
const len0 = data2.length;
for(let i0=0; i0<len0; i0++){
let data3 = data2[i0];
if(typeof data3 === "string"){
if(!pattern20.test(data3)){
const err13 = {instancePath:instancePath+"/command/" + i0,schemaPath:"#/$defs/commandWords/anyOf/1/items/pattern",keyword:"pattern",params:{pattern: "\\S"},message:"must match pattern \""+"\\S"+"\""};
if(vErrors === null){
vErrors = [err13];
}
else {
vErrors.push(err13);
}
errors++;
}
}
else {
const err14 = {instancePath:instancePath+"/command/" + i0,schemaPath:"#/$defs/commandWords/anyOf/1/items/type",keyword:"type",params:{type: "string"},message:"must be string"};
if(vErrors === null){
vErrors = [err14];
}
else {
vErrors.push(err14);
}
errors++;
}
}
}
else {
const err15 = {instancePath:instancePath+"/command",schemaPath:"#/$defs/commandWords/anyOf/1/type",keyword:"type",params:{type: "array"},message:"must be array"};
if(vErrors === null){
vErrors = [err15];
}
else {
vErrors.push(err15);
}
errors++;
}
var _valid1 = _errs15 === errors;
valid4 = valid4 || _valid1;
if(!valid4){
const err16 = {instancePath:instancePath+"/command",schemaPath:"#/$defs/commandWords/anyOf",keyword:"anyOf",params:{},message:"must match a schema in anyOf"};
if(vErrors === null){
vErrors = [err16];
}
else {
vErrors.push(err16);
}
errors++;
}
else {
errors = _errs12;
if(vErrors !== null){
if(_errs12){
vErrors.length = _errs12;
}
else {
vErrors = null;
}
}
}
}
if(data.flags !== undefined){
let data4 = data.flags;
if(Array.isArray(data4)){
if(data4.length > 64){
const err17 = {instancePath:instancePath+"/flags",schemaPath:"#/$defs/flags/maxItems",keyword:"maxItems",params:{limit: 64},message:"must NOT have more than 64 items"};
if(vErrors === null){
vErrors = [err17];
}
else {
vErrors.push(err17);
}
errors++;
}
if(data4.length < 1){
const err18 = {instancePath:instancePath+"/flags",schemaPath:"#/$defs/flags/minItems",keyword:"minItems",params:{limit: 1},message:"must NOT have fewer than 1 items"};
if(vErrors === null){
vErrors = [err18];
}
else {
vErrors.push(err18);
}
errors++;
}
const len1 = data4.length;
for(let i1=0; i1<len1; i1++){
let data5 = data4[i1];
if(typeof data5 === "string"){
if(!pattern22.test(data5)){
const err19 = {instancePath:instancePath+"/flags/" + i1,schemaPath:"#/$defs/flags/items/pattern",keyword:"pattern",params:{pattern: "^[A-Za-z0-9][A-Za-z0-9-]*$"},message:"must match pattern \""+"^[A-Za-z0-9][A-Za-z0-9-]*$"+"\""};
if(vErrors === null){
vErrors = [err19];
}
else {
vErrors.push(err19);
}
errors++;
}
}
else {
const err20 = {instancePath:instancePath+"/flags/" + i1,schemaPath:"#/$defs/flags/items/type",keyword:"type",params:{type: "string"},message:"must be string"};
if(vErrors === null){
vErrors = [err20];
}
else {
vErrors.push(err20);
}
errors++;
}
}
}
else {
const err21 = {instancePath:instancePath+"/flags",schemaPath:"#/$defs/flags/type",keyword:"type",params:{type: "array"},message:"must be array"};
if(vErrors === null){
vErrors = [err21];
}
else {
vErrors.push(err21);
}
errors++;
}
}
if(data.prefix !== undefined){
let data6 = data.prefix;
const _errs26 = errors;
let valid11 = false;
const _errs27 = errors;
if(typeof data6 === "string"){
if(func2(data6) < 1){
const err22 = {instancePath:instancePath+"/prefix",schemaPath:"#/$defs/prefixes/anyOf/0/minLength",keyword:"minLength",params:{limit: 1},message:"must NOT have fewer than 1 characters"};
if(vErrors === null){
vErrors = [err22];
}
else {
vErrors.push(err22);
}
errors++;
}
}
else {
const err23 = {instancePath:instancePath+"/prefix",schemaPath:"#/$defs/prefixes/anyOf/0/type",keyword:"type",params:{type: "string"},message:"must be string"};
if(vErrors === null){
vErrors = [err23];
}
else {
vErrors.push(err23);
}
errors++;
}
var _valid2 = _errs27 === errors;
valid11 = valid11 || _valid2;
const _errs29 = errors;
if(Array.isArray(data6)){
if(data6.length > 256){
const err24 = {instancePath:instancePath+"/prefix",schemaPath:"#/$defs/prefixes/anyOf/1/maxItems",keyword:"maxItems",params:{limit: 256},message:"must NOT have more than 256 items"};
if(vErrors === null){
vErrors = [err24];
}
else {
vErrors.push(err24);
}
errors++;
}
if(data6.length < 1){
const err25 = {instancePath:instancePath+"/prefix",schemaPath:"#/$defs/prefixes/anyOf/1/minItems",keyword:"minItems",params:{limit: 1},message:"must NOT have fewer than 1 items"};
if(vErrors === null){
vErrors = [err25];
}
else {
vErrors.push(err25);
}
errors++;
}
const len2 = data6.length;
for(let i2=0; i2<len2; i2++){
let data7 = data6[i2];
if(typeof data7 === "string"){
if(func2(data7) < 1){
const err26 = {instancePath:instancePath+"/prefix/" + i2,schemaPath:"#/$defs/prefixes/anyOf/1/items/minLength",keyword:"minLength",params:{limit: 1},message:"must NOT have fewer than 1 characters"};
if(vErrors === null){
vErrors = [err26];
}
else {
vErrors.push(err26);
}
errors++;
}
}
else {
const err27 = {instancePath:instancePath+"/prefix/" + i2,schemaPath:"#/$defs/prefixes/anyOf/1/items/type",keyword:"type",params:{type: "string"},message:"must be string"};
if(vErrors === null){
vErrors = [err27];
}
else {
vErrors.push(err27);
}
errors++;
}
}
}
else {
const err28 = {instancePath:instancePath+"/prefix",schemaPath:"#/$defs/prefixes/anyOf/1/type",keyword:"type",params:{type: "array"},message:"must be array"};
if(vErrors === null){
vErrors = [err28];
}
else {
vErrors.push(err28);
}
errors++;
}
var _valid2 = _errs29 === errors;
valid11 = valid11 || _valid2;
if(!valid11){
const err29 = {instancePath:instancePath+"/prefix",schemaPath:"#/$defs/prefixes/anyOf",keyword:"anyOf",params:{},message:"must match a schema in anyOf"};
if(vErrors === null){
vErrors = [err29];
}
else {
vErrors.push(err29);
}
errors++;
}
else {
errors = _errs26;
if(vErrors !== null){
if(_errs26){
vErrors.length = _errs26;
}
else {
vErrors = null;
}
}
}
}
if(data.regex !== undefined){
let data8 = data.regex;
if(typeof data8 === "string"){
if(func2(data8) > 4096){
const err30 = {instancePath:instancePath+"/regex",schemaPath:"#/$defs/regex/maxLength",keyword:"maxLength",params:{limit: 4096},message:"must NOT have more than 4096 characters"};
if(vErrors === null){
vErrors = [err30];
}
else {
vErrors.push(err30);
}
errors++;
}
if(func2(data8) < 1){
const err31 = {instancePath:instancePath+"/regex",schemaPath:"#/$defs/regex/minLength",keyword:"minLength",params:{limit: 1},message:"must NOT have fewer than 1 characters"};
if(vErrors === null){
vErrors = [err31];
}
else {
vErrors.push(err31);
}
errors++;
}
}
else {
const err32 = {instancePath:instancePath+"/regex",schemaPath:"#/$defs/regex/type",keyword:"type",params:{type: "string"},message:"must be string"};
if(vErrors === null){
vErrors = [err32];
}
else {
vErrors.push(err32);
}
errors++;
}
}
if(data.reason !== undefined){
let data9 = data.reason;
if(typeof data9 === "string"){
if(func2(data9) > 500){
const err33 = {instancePath:instancePath+"/reason",schemaPath:"#/$defs/reason/maxLength",keyword:"maxLength",params:{limit: 500},message:"must NOT have more than 500 characters"};
if(vErrors === null){
vErrors = [err33];
}
else {
vErrors.push(err33);
}
errors++;
}
if(func2(data9) < 1){
const err34 = {instancePath:instancePath+"/reason",schemaPath:"#/$defs/reason/minLength",keyword:"minLength",params:{limit: 1},message:"must NOT have fewer than 1 characters"};
if(vErrors === null){
vErrors = [err34];
}
else {
vErrors.push(err34);
}
errors++;
}
}
else {
const err35 = {instancePath:instancePath+"/reason",schemaPath:"#/$defs/reason/type",keyword:"type",params:{type: "string"},message:"must be string"};
if(vErrors === null){
vErrors = [err35];
}
else {
vErrors.push(err35);
}
errors++;
}
}
if(data.flags !== undefined){
if(data.command === undefined){
const err36 = {instancePath,schemaPath:"#/dependentRequired",keyword:"dependentRequired",params:{property: "flags",
    missingProperty: "command",
    depsCount: 1,
    deps: "command"},message:"must have property command when property flags is present"};
if(vErrors === null){
vErrors = [err36];
}
else {
vErrors.push(err36);
}
errors++;
}
}
}
else {
const err37 = {instancePath,schemaPath:"#/type",keyword:"type",params:{type: "object"},message:"must be object"};
if(vErrors === null){
vErrors = [err37];
}
else {
vErrors.push(err37);
}
errors++;
}
validate35.errors = vErrors;
return errors === 0;
}
validate35.evaluated = {"props":true,"dynamicProps":false,"dynamicItems":false};


function validate34(data, {instancePath="", parentData, parentDataProperty, rootData=data, dynamicAnchors={}}={}){
let vErrors = null;
let errors = 0;
const evaluated0 = validate34.evaluated;
if(evaluated0.dynamicProps){
evaluated0.props = undefined;
}
if(evaluated0.dynamicItems){
evaluated0.items = undefined;
}
if(data && typeof data == "object" && !Array.isArray(data)){
for(const key0 in data){
if(!((((key0 === "default") || (key0 === "reason")) || (key0 === "uncertain")) || (key0 === "list"))){
const err0 = {instancePath,schemaPath:"#/additionalProperties",keyword:"additionalProperties",params:{additionalProperty: key0},message:"must NOT have additional properties"};
if(vErrors === null){
vErrors = [err0];
}
else {
vErrors.push(err0);
}
errors++;
}
}
if(data.default !== undefined){
let data0 = data.default;
if(!((data0 === "allow") || (data0 === "deny"))){
const err1 = {instancePath:instancePath+"/default",schemaPath:"#/properties/default/enum",keyword:"enum",params:{allowedValues: schema50.properties.default.enum},message:"must be equal to one of the allowed values"};
if(vErrors === null){
vErrors = [err1];
}
else {
vErrors.push(err1);
}
errors++;
}
}
if(data.reason !== undefined){
let data1 = data.reason;
if(typeof data1 === "string"){
if(func2(data1) > 500){
const err2 = {instancePath:instancePath+"/reason",schemaPath:"#/$defs/reason/maxLength",keyword:"maxLength",params:{limit: 500},message:"must NOT have more than 500 characters"};
if(vErrors === null){
vErrors = [err2];
}
else {
vErrors.push(err2);
}
errors++;
}
if(func2(data1) < 1){
const err3 = {instancePath:instancePath+"/reason",schemaPath:"#/$defs/reason/minLength",keyword:"minLength",params:{limit: 1},message:"must NOT have fewer than 1 characters"};
if(vErrors === null){
vErrors = [err3];
}
else {
vErrors.push(err3);
}
errors++;
}
}
else {
const err4 = {instancePath:instancePath+"/reason",schemaPath:"#/$defs/reason/type",keyword:"type",params:{type: "string"},message:"must be string"};
if(vErrors === null){
vErrors = [err4];
}
else {
vErrors.push(err4);
}
errors++;
}
}
if(data.uncertain !== undefined){
let data2 = data.uncertain;
if(!((data2 === "allow") || (data2 === "deny"))){
const err5 = {instancePath:instancePath+"/uncertain",schemaPath:"#/properties/uncertain/enum",keyword:"enum",params:{allowedValues: schema50.properties.uncertain.enum},message:"must be equal to one of the allowed values"};
if(vErrors === null){
vErrors = [err5];
}
else {
vErrors.push(err5);
}
errors++;
}
}
if(data.list !== undefined){
let data3 = data.list;
if(Array.isArray(data3)){
if(data3.length > 1024){
const err6 = {instancePath:instancePath+"/list",schemaPath:"#/properties/list/maxItems",keyword:"maxItems",params:{limit: 1024},message:"must NOT have more than 1024 items"};
if(vErrors === null){
vErrors = [err6];
}
else {
vErrors.push(err6);
}
errors++;
}
const len0 = data3.length;
for(let i0=0; i0<len0; i0++){
if(!(validate35(data3[i0], {instancePath:instancePath+"/list/" + i0,parentData:data3,parentDataProperty:i0,rootData,dynamicAnchors}))){
vErrors = vErrors === null ? validate35.errors : vErrors.concat(validate35.errors);
errors = vErrors.length;
}
}
}
else {
const err7 = {instancePath:instancePath+"/list",schemaPath:"#/properties/list/type",keyword:"type",params:{type: "array"},message:"must be array"};
if(vErrors === null){
vErrors = [err7];
}
else {
vErrors.push(err7);
}
errors++;
}
}
}
else {
const err8 = {instancePath,schemaPath:"#/type",keyword:"type",params:{type: "object"},message:"must be object"};
if(vErrors === null){
vErrors = [err8];
}
else {
vErrors.push(err8);
}
errors++;
}
validate34.errors = vErrors;
return errors === 0;
}
validate34.evaluated = {"props":true,"dynamicProps":false,"dynamicItems":false};

const schema59 = {"type":"object","additionalProperties":false,"description":"Which references may be used, by which commands, and how.","properties":{"alias":{"type":"boolean","description":"Accept the `{{secret:NAME}}` / `{{decrypt:ID}}` spelling. When false it is plain text."},"minLength":{"type":"integer","minimum":1,"maximum":1024,"description":"Shortest resolved value that may be used; shorter values are refused (they cannot be masked reliably)."},"allow":{"type":"array","maxItems":1024,"uniqueItems":true,"items":{"$ref":"#/$defs/refPattern"},"description":"References that may be used at all. A command naming any other is denied. Default: all."},"restrict":{"type":"array","maxItems":1024,"items":{"$ref":"#/$defs/restriction"},"description":"Per-reference command restrictions; all that apply to a reference must be met."},"unknown":{"enum":["literal","warn","deny"],"description":"A reference no source knows: `literal` (default) passes the token on as text; `warn` does that and logs a warning; `deny` refuses the run (EXECGATE_ERR_REF_UNKNOWN) before anything is spawned."},"bind":{"type":"array","maxItems":1024,"items":{"$ref":"#/$defs/secretBinding"},"description":"Secrets bound to the hosts they are for. A run using a bound secret may send it only there; with `delivery: inject` the run never receives the value at all (the egress proxy puts it into requests to those hosts). Lists from extended policies are combined."}}};
const schema60 = {"title":"a reference such as `secret:NAME` or `decrypt:ID` (`*` matches any characters)","type":"string","pattern":"^(secret|decrypt):[A-Za-z0-9._/*-]{1,128}$"};
const pattern23 = new RegExp("^(secret|decrypt):[A-Za-z0-9._/*-]{1,128}$", "u");
const schema61 = {"type":"object","additionalProperties":false,"required":["ref"],"description":"Which commands may use a secret. Give exactly one of `command`, `prefix`, `regex`; every simple command must match.","properties":{"id":{"$ref":"#/$defs/ruleId"},"ref":{"anyOf":[{"$ref":"#/$defs/refPattern"},{"type":"array","minItems":1,"maxItems":256,"items":{"$ref":"#/$defs/refPattern"}}],"description":"The reference(s) this restriction applies to."},"command":{"$ref":"#/$defs/commandWords"},"flags":{"$ref":"#/$defs/flags"},"prefix":{"$ref":"#/$defs/prefixes"},"regex":{"$ref":"#/$defs/regex"},"reason":{"$ref":"#/$defs/reason"}},"dependentRequired":{"flags":["command"]},"oneOf":[{"required":["command"]},{"required":["prefix"]},{"required":["regex"]}]};

function validate39(data, {instancePath="", parentData, parentDataProperty, rootData=data, dynamicAnchors={}}={}){
let vErrors = null;
let errors = 0;
const evaluated0 = validate39.evaluated;
if(evaluated0.dynamicProps){
evaluated0.props = undefined;
}
if(evaluated0.dynamicItems){
evaluated0.items = undefined;
}
const _errs1 = errors;
let valid0 = false;
let passing0 = null;
const _errs2 = errors;
if(data && typeof data == "object" && !Array.isArray(data)){
if(data.command === undefined){
const err0 = {instancePath,schemaPath:"#/oneOf/0/required",keyword:"required",params:{missingProperty: "command"},message:"must have required property '"+"command"+"'"};
if(vErrors === null){
vErrors = [err0];
}
else {
vErrors.push(err0);
}
errors++;
}
}
var _valid0 = _errs2 === errors;
if(_valid0){
valid0 = true;
passing0 = 0;
}
const _errs3 = errors;
if(data && typeof data == "object" && !Array.isArray(data)){
if(data.prefix === undefined){
const err1 = {instancePath,schemaPath:"#/oneOf/1/required",keyword:"required",params:{missingProperty: "prefix"},message:"must have required property '"+"prefix"+"'"};
if(vErrors === null){
vErrors = [err1];
}
else {
vErrors.push(err1);
}
errors++;
}
}
var _valid0 = _errs3 === errors;
if(_valid0 && valid0){
valid0 = false;
passing0 = [passing0, 1];
}
else {
if(_valid0){
valid0 = true;
passing0 = 1;
}
const _errs4 = errors;
if(data && typeof data == "object" && !Array.isArray(data)){
if(data.regex === undefined){
const err2 = {instancePath,schemaPath:"#/oneOf/2/required",keyword:"required",params:{missingProperty: "regex"},message:"must have required property '"+"regex"+"'"};
if(vErrors === null){
vErrors = [err2];
}
else {
vErrors.push(err2);
}
errors++;
}
}
var _valid0 = _errs4 === errors;
if(_valid0 && valid0){
valid0 = false;
passing0 = [passing0, 2];
}
else {
if(_valid0){
valid0 = true;
passing0 = 2;
}
}
}
if(!valid0){
const err3 = {instancePath,schemaPath:"#/oneOf",keyword:"oneOf",params:{passingSchemas: passing0},message:"must match exactly one schema in oneOf"};
if(vErrors === null){
vErrors = [err3];
}
else {
vErrors.push(err3);
}
errors++;
}
else {
errors = _errs1;
if(vErrors !== null){
if(_errs1){
vErrors.length = _errs1;
}
else {
vErrors = null;
}
}
}
if(data && typeof data == "object" && !Array.isArray(data)){
if(data.ref === undefined){
const err4 = {instancePath,schemaPath:"#/required",keyword:"required",params:{missingProperty: "ref"},message:"must have required property '"+"ref"+"'"};
if(vErrors === null){
vErrors = [err4];
}
else {
vErrors.push(err4);
}
errors++;
}
for(const key0 in data){
if(!(((((((key0 === "id") || (key0 === "ref")) || (key0 === "command")) || (key0 === "flags")) || (key0 === "prefix")) || (key0 === "regex")) || (key0 === "reason"))){
const err5 = {instancePath,schemaPath:"#/additionalProperties",keyword:"additionalProperties",params:{additionalProperty: key0},message:"must NOT have additional properties"};
if(vErrors === null){
vErrors = [err5];
}
else {
vErrors.push(err5);
}
errors++;
}
}
if(data.id !== undefined){
let data0 = data.id;
if(typeof data0 === "string"){
if(!pattern19.test(data0)){
const err6 = {instancePath:instancePath+"/id",schemaPath:"#/$defs/ruleId/pattern",keyword:"pattern",params:{pattern: "^[A-Za-z0-9][A-Za-z0-9._:/\\[\\]-]{0,127}$"},message:"must match pattern \""+"^[A-Za-z0-9][A-Za-z0-9._:/\\[\\]-]{0,127}$"+"\""};
if(vErrors === null){
vErrors = [err6];
}
else {
vErrors.push(err6);
}
errors++;
}
}
else {
const err7 = {instancePath:instancePath+"/id",schemaPath:"#/$defs/ruleId/type",keyword:"type",params:{type: "string"},message:"must be string"};
if(vErrors === null){
vErrors = [err7];
}
else {
vErrors.push(err7);
}
errors++;
}
}
if(data.ref !== undefined){
let data1 = data.ref;
const _errs10 = errors;
let valid3 = false;
const _errs11 = errors;
if(typeof data1 === "string"){
if(!pattern23.test(data1)){
const err8 = {instancePath:instancePath+"/ref",schemaPath:"#/$defs/refPattern/pattern",keyword:"pattern",params:{pattern: "^(secret|decrypt):[A-Za-z0-9._/*-]{1,128}$"},message:"must match pattern \""+"^(secret|decrypt):[A-Za-z0-9._/*-]{1,128}$"+"\""};
if(vErrors === null){
vErrors = [err8];
}
else {
vErrors.push(err8);
}
errors++;
}
}
else {
const err9 = {instancePath:instancePath+"/ref",schemaPath:"#/$defs/refPattern/type",keyword:"type",params:{type: "string"},message:"must be string"};
if(vErrors === null){
vErrors = [err9];
}
else {
vErrors.push(err9);
}
errors++;
}
var _valid1 = _errs11 === errors;
valid3 = valid3 || _valid1;
const _errs14 = errors;
if(Array.isArray(data1)){
if(data1.length > 256){
const err10 = {instancePath:instancePath+"/ref",schemaPath:"#/properties/ref/anyOf/1/maxItems",keyword:"maxItems",params:{limit: 256},message:"must NOT have more than 256 items"};
if(vErrors === null){
vErrors = [err10];
}
else {
vErrors.push(err10);
}
errors++;
}
if(data1.length < 1){
const err11 = {instancePath:instancePath+"/ref",schemaPath:"#/properties/ref/anyOf/1/minItems",keyword:"minItems",params:{limit: 1},message:"must NOT have fewer than 1 items"};
if(vErrors === null){
vErrors = [err11];
}
else {
vErrors.push(err11);
}
errors++;
}
const len0 = data1.length;
for(let i0=0; i0<len0; i0++){
let data2 = data1[i0];
if(typeof data2 === "string"){
if(!pattern23.test(data2)){
const err12 = {instancePath:instancePath+"/ref/" + i0,schemaPath:"#/$defs/refPattern/pattern",keyword:"pattern",params:{pattern: "^(secret|decrypt):[A-Za-z0-9._/*-]{1,128}$"},message:"must match pattern \""+"^(secret|decrypt):[A-Za-z0-9._/*-]{1,128}$"+"\""};
if(vErrors === null){
vErrors = [err12];
}
else {
vErrors.push(err12);
}
errors++;
}
}
else {
const err13 = {instancePath:instancePath+"/ref/" + i0,schemaPath:"#/$defs/refPattern/type",keyword:"type",params:{type: "string"},message:"must be string"};
if(vErrors === null){
vErrors = [err13];
}
else {
vErrors.push(err13);
}
errors++;
}
}
}
else {
const err14 = {instancePath:instancePath+"/ref",schemaPath:"#/properties/ref/anyOf/1/type",keyword:"type",params:{type: "array"},message:"must be array"};
if(vErrors === null){
vErrors = [err14];
}
else {
vErrors.push(err14);
}
errors++;
}
var _valid1 = _errs14 === errors;
valid3 = valid3 || _valid1;
if(!valid3){
const err15 = {instancePath:instancePath+"/ref",schemaPath:"#/properties/ref/anyOf",keyword:"anyOf",params:{},message:"must match a schema in anyOf"};
if(vErrors === null){
vErrors = [err15];
}
else {
vErrors.push(err15);
}
errors++;
}
else {
errors = _errs10;
if(vErrors !== null){
if(_errs10){
vErrors.length = _errs10;
}
else {
vErrors = null;
}
}
}
}
if(data.command !== undefined){
let data3 = data.command;
const _errs21 = errors;
let valid9 = false;
const _errs22 = errors;
if(typeof data3 === "string"){
if(!pattern20.test(data3)){
const err16 = {instancePath:instancePath+"/command",schemaPath:"#/$defs/commandWords/anyOf/0/pattern",keyword:"pattern",params:{pattern: "\\S"},message:"must match pattern \""+"\\S"+"\""};
if(vErrors === null){
vErrors = [err16];
}
else {
vErrors.push(err16);
}
errors++;
}
}
else {
const err17 = {instancePath:instancePath+"/command",schemaPath:"#/$defs/commandWords/anyOf/0/type",keyword:"type",params:{type: "string"},message:"must be string"};
if(vErrors === null){
vErrors = [err17];
}
else {
vErrors.push(err17);
}
errors++;
}
var _valid2 = _errs22 === errors;
valid9 = valid9 || _valid2;
const _errs24 = errors;
if(Array.isArray(data3)){
if(data3.length > 256){
const err18 = {instancePath:instancePath+"/command",schemaPath:"#/$defs/commandWords/anyOf/1/maxItems",keyword:"maxItems",params:{limit: 256},message:"must NOT have more than 256 items"};
if(vErrors === null){
vErrors = [err18];
}
else {
vErrors.push(err18);
}
errors++;
}
if(data3.length < 1){
const err19 = {instancePath:instancePath+"/command",schemaPath:"#/$defs/commandWords/anyOf/1/minItems",keyword:"minItems",params:{limit: 1},message:"must NOT have fewer than 1 items"};
if(vErrors === null){
vErrors = [err19];
}
else {
vErrors.push(err19);
}
errors++;
}
const len1 = data3.length;
for(let i1=0; i1<len1; i1++){
let data4 = data3[i1];
if(typeof data4 === "string"){
if(!pattern20.test(data4)){
const err20 = {instancePath:instancePath+"/command/" + i1,schemaPath:"#/$defs/commandWords/anyOf/1/items/pattern",keyword:"pattern",params:{pattern: "\\S"},message:"must match pattern \""+"\\S"+"\""};
if(vErrors === null){
vErrors = [err20];
}
else {
vErrors.push(err20);
}
errors++;
}
}
else {
const err21 = {instancePath:instancePath+"/command/" + i1,schemaPath:"#/$defs/commandWords/anyOf/1/items/type",keyword:"type",params:{type: "string"},message:"must be string"};
if(vErrors === null){
vErrors = [err21];
}
else {
vErrors.push(err21);
}
errors++;
}
}
}
else {
const err22 = {instancePath:instancePath+"/command",schemaPath:"#/$defs/commandWords/anyOf/1/type",keyword:"type",params:{type: "array"},message:"must be array"};
if(vErrors === null){
vErrors = [err22];
}
else {
vErrors.push(err22);
}
errors++;
}
var _valid2 = _errs24 === errors;
valid9 = valid9 || _valid2;
if(!valid9){
const err23 = {instancePath:instancePath+"/command",schemaPath:"#/$defs/commandWords/anyOf",keyword:"anyOf",params:{},message:"must match a schema in anyOf"};
if(vErrors === null){
vErrors = [err23];
}
else {
vErrors.push(err23);
}
errors++;
}
else {
errors = _errs21;
if(vErrors !== null){
if(_errs21){
vErrors.length = _errs21;
}
else {
vErrors = null;
}
}
}
}
if(data.flags !== undefined){
let data5 = data.flags;
if(Array.isArray(data5)){
if(data5.length > 64){
const err24 = {instancePath:instancePath+"/flags",schemaPath:"#/$defs/flags/maxItems",keyword:"maxItems",params:{limit: 64},message:"must NOT have more than 64 items"};
if(vErrors === null){
vErrors = [err24];
}
else {
vErrors.push(err24);
}
errors++;
}
if(data5.length < 1){
const err25 = {instancePath:instancePath+"/flags",schemaPath:"#/$defs/flags/minItems",keyword:"minItems",params:{limit: 1},message:"must NOT have fewer than 1 items"};
if(vErrors === null){
vErrors = [err25];
}
else {
vErrors.push(err25);
}
errors++;
}
const len2 = data5.length;
for(let i2=0; i2<len2; i2++){
let data6 = data5[i2];
if(typeof data6 === "string"){
if(!pattern22.test(data6)){
const err26 = {instancePath:instancePath+"/flags/" + i2,schemaPath:"#/$defs/flags/items/pattern",keyword:"pattern",params:{pattern: "^[A-Za-z0-9][A-Za-z0-9-]*$"},message:"must match pattern \""+"^[A-Za-z0-9][A-Za-z0-9-]*$"+"\""};
if(vErrors === null){
vErrors = [err26];
}
else {
vErrors.push(err26);
}
errors++;
}
}
else {
const err27 = {instancePath:instancePath+"/flags/" + i2,schemaPath:"#/$defs/flags/items/type",keyword:"type",params:{type: "string"},message:"must be string"};
if(vErrors === null){
vErrors = [err27];
}
else {
vErrors.push(err27);
}
errors++;
}
}
}
else {
const err28 = {instancePath:instancePath+"/flags",schemaPath:"#/$defs/flags/type",keyword:"type",params:{type: "array"},message:"must be array"};
if(vErrors === null){
vErrors = [err28];
}
else {
vErrors.push(err28);
}
errors++;
}
}
if(data.prefix !== undefined){
let data7 = data.prefix;
const _errs35 = errors;
let valid16 = false;
const _errs36 = errors;
if(typeof data7 === "string"){
if(func2(data7) < 1){
const err29 = {instancePath:instancePath+"/prefix",schemaPath:"#/$defs/prefixes/anyOf/0/minLength",keyword:"minLength",params:{limit: 1},message:"must NOT have fewer than 1 characters"};
if(vErrors === null){
vErrors = [err29];
}
else {
vErrors.push(err29);
}
errors++;
}
}
else {
const err30 = {instancePath:instancePath+"/prefix",schemaPath:"#/$defs/prefixes/anyOf/0/type",keyword:"type",params:{type: "string"},message:"must be string"};
if(vErrors === null){
vErrors = [err30];
}
else {
vErrors.push(err30);
}
errors++;
}
var _valid3 = _errs36 === errors;
valid16 = valid16 || _valid3;
const _errs38 = errors;
if(Array.isArray(data7)){
if(data7.length > 256){
const err31 = {instancePath:instancePath+"/prefix",schemaPath:"#/$defs/prefixes/anyOf/1/maxItems",keyword:"maxItems",params:{limit: 256},message:"must NOT have more than 256 items"};
if(vErrors === null){
vErrors = [err31];
}
else {
vErrors.push(err31);
}
errors++;
}
if(data7.length < 1){
const err32 = {instancePath:instancePath+"/prefix",schemaPath:"#/$defs/prefixes/anyOf/1/minItems",keyword:"minItems",params:{limit: 1},message:"must NOT have fewer than 1 items"};
if(vErrors === null){
vErrors = [err32];
}
else {
vErrors.push(err32);
}
errors++;
}
const len3 = data7.length;
for(let i3=0; i3<len3; i3++){
let data8 = data7[i3];
if(typeof data8 === "string"){
if(func2(data8) < 1){
const err33 = {instancePath:instancePath+"/prefix/" + i3,schemaPath:"#/$defs/prefixes/anyOf/1/items/minLength",keyword:"minLength",params:{limit: 1},message:"must NOT have fewer than 1 characters"};
if(vErrors === null){
vErrors = [err33];
}
else {
vErrors.push(err33);
}
errors++;
}
}
else {
const err34 = {instancePath:instancePath+"/prefix/" + i3,schemaPath:"#/$defs/prefixes/anyOf/1/items/type",keyword:"type",params:{type: "string"},message:"must be string"};
if(vErrors === null){
vErrors = [err34];
}
else {
vErrors.push(err34);
}
errors++;
}
}
}
else {
const err35 = {instancePath:instancePath+"/prefix",schemaPath:"#/$defs/prefixes/anyOf/1/type",keyword:"type",params:{type: "array"},message:"must be array"};
if(vErrors === null){
vErrors = [err35];
}
else {
vErrors.push(err35);
}
errors++;
}
var _valid3 = _errs38 === errors;
valid16 = valid16 || _valid3;
if(!valid16){
const err36 = {instancePath:instancePath+"/prefix",schemaPath:"#/$defs/prefixes/anyOf",keyword:"anyOf",params:{},message:"must match a schema in anyOf"};
if(vErrors === null){
vErrors = [err36];
}
else {
vErrors.push(err36);
}
errors++;
}
else {
errors = _errs35;
if(vErrors !== null){
if(_errs35){
vErrors.length = _errs35;
}
else {
vErrors = null;
}
}
}
}
if(data.regex !== undefined){
let data9 = data.regex;
if(typeof data9 === "string"){
if(func2(data9) > 4096){
const err37 = {instancePath:instancePath+"/regex",schemaPath:"#/$defs/regex/maxLength",keyword:"maxLength",params:{limit: 4096},message:"must NOT have more than 4096 characters"};
if(vErrors === null){
vErrors = [err37];
}
else {
vErrors.push(err37);
}
errors++;
}
if(func2(data9) < 1){
const err38 = {instancePath:instancePath+"/regex",schemaPath:"#/$defs/regex/minLength",keyword:"minLength",params:{limit: 1},message:"must NOT have fewer than 1 characters"};
if(vErrors === null){
vErrors = [err38];
}
else {
vErrors.push(err38);
}
errors++;
}
}
else {
const err39 = {instancePath:instancePath+"/regex",schemaPath:"#/$defs/regex/type",keyword:"type",params:{type: "string"},message:"must be string"};
if(vErrors === null){
vErrors = [err39];
}
else {
vErrors.push(err39);
}
errors++;
}
}
if(data.reason !== undefined){
let data10 = data.reason;
if(typeof data10 === "string"){
if(func2(data10) > 500){
const err40 = {instancePath:instancePath+"/reason",schemaPath:"#/$defs/reason/maxLength",keyword:"maxLength",params:{limit: 500},message:"must NOT have more than 500 characters"};
if(vErrors === null){
vErrors = [err40];
}
else {
vErrors.push(err40);
}
errors++;
}
if(func2(data10) < 1){
const err41 = {instancePath:instancePath+"/reason",schemaPath:"#/$defs/reason/minLength",keyword:"minLength",params:{limit: 1},message:"must NOT have fewer than 1 characters"};
if(vErrors === null){
vErrors = [err41];
}
else {
vErrors.push(err41);
}
errors++;
}
}
else {
const err42 = {instancePath:instancePath+"/reason",schemaPath:"#/$defs/reason/type",keyword:"type",params:{type: "string"},message:"must be string"};
if(vErrors === null){
vErrors = [err42];
}
else {
vErrors.push(err42);
}
errors++;
}
}
if(data.flags !== undefined){
if(data.command === undefined){
const err43 = {instancePath,schemaPath:"#/dependentRequired",keyword:"dependentRequired",params:{property: "flags",
    missingProperty: "command",
    depsCount: 1,
    deps: "command"},message:"must have property command when property flags is present"};
if(vErrors === null){
vErrors = [err43];
}
else {
vErrors.push(err43);
}
errors++;
}
}
}
else {
const err44 = {instancePath,schemaPath:"#/type",keyword:"type",params:{type: "object"},message:"must be object"};
if(vErrors === null){
vErrors = [err44];
}
else {
vErrors.push(err44);
}
errors++;
}
validate39.errors = vErrors;
return errors === 0;
}
validate39.evaluated = {"props":true,"dynamicProps":false,"dynamicItems":false};

const schema70 = {"title":"a secret bound to hosts: `{ref: secret:NAME, hosts: [HOST, ...], delivery: env|inject, headers, query, ...}`","type":"object","additionalProperties":false,"required":["ref","hosts"],"properties":{"ref":{"title":"one reference, `secret:NAME` or `decrypt:ID` (no `*`)","type":"string","pattern":"^(secret|decrypt):[A-Za-z0-9][A-Za-z0-9._/-]{0,127}$"},"hosts":{"type":"array","maxItems":256,"items":{"$ref":"#/$defs/hostPattern"},"description":"The hosts the secret is for (at least one). They also bound what the run may reach: intersected with `sandbox.network`."},"delivery":{"enum":["env","inject"],"description":"`env` (default): the value is in the child's environment, the run gets a network namespace of its own, and every connection of the run is limited to these hosts. `inject`: the child holds a random sentinel of the same shape; the egress proxy swaps in the value only over TLS to these hosts on their port (443 when a pattern names none), only where `headers`, `query`, `cookies`, `path` and `body` allow; a sentinel anywhere else fails the request (needs the sandbox)."},"headers":{"type":"array","maxItems":64,"items":{"$ref":"#/$defs/httpToken"},"description":"`inject` only. Headers whose whole credential may be the value: bare, after `Bearer` or `token`, or as the user or password of `Basic` credentials. Default `[Authorization]`; a list replaces it (write `[Authorization, X-Api-Key]` to keep both). `Host`, `Cookie`, `Content-Length` and other headers that frame or route a request cannot be listed."},"query":{"type":"array","maxItems":64,"items":{"$ref":"#/$defs/httpToken"},"description":"`inject` only. Query parameters whose whole (decoded) value may be the value, such as `access_token`. Default none."},"cookies":{"type":"array","maxItems":64,"items":{"$ref":"#/$defs/httpToken"},"description":"`inject` only. Cookies whose whole value may be the value. Default none."},"path":{"type":"boolean","description":"`inject` only. The value may be anywhere in the request path. Default false."},"body":{"type":"boolean","description":"`inject` only. The value may be anywhere in an uncompressed request body. Default false: a body is what a server stores, and a stored value can be read back."},"methods":{"type":"array","minItems":1,"maxItems":32,"items":{"$ref":"#/$defs/httpToken"},"description":"`inject` only. Request methods the value is put into (`GET`, `POST`, ...). Default any."},"paths":{"type":"array","minItems":1,"maxItems":256,"items":{"type":"string","pattern":"^/[^\\s?#%\\\\]*$","maxLength":1024},"description":"`inject` only. Paths the value is put into: a prefix ending at a segment boundary (`/repos` covers `/repos/x`, not `/reposx`), or a glob where `*` is one segment and `**` anything. A path with dot segments or encoded slashes never matches. Default any."},"http":{"type":"array","maxItems":64,"items":{"$ref":"#/$defs/hostPattern"},"description":"`inject` only. Hosts of this binding, named exactly (no wildcard), that may receive the value over plain HTTP, on the pattern's port (80 when it names none): for a local test server. Never after a redirect that changed scheme, host or port. Default none: the value goes over TLS only."},"responses":{"enum":["decode","identity"],"description":"`inject` only. `decode` (default): compressed responses (gzip, deflate, br) from these hosts are decoded, cleaned of the value and encoded again. `identity`: the proxy asks for uncompressed responses and refuses any encoded one. A response in an encoding the proxy cannot read is refused either way."}}};
const schema71 = {"title":"a host pattern: `api.github.com`, `*.npmjs.org`, `*`, `192.0.2.10`, `[2001:db8::1]`, each with an optional `:PORT`","type":"string","minLength":1,"maxLength":300};
const schema72 = {"title":"an HTTP token (a header, parameter or cookie name, or a method)","type":"string","pattern":"^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,256}$"};
const pattern30 = new RegExp("^(secret|decrypt):[A-Za-z0-9][A-Za-z0-9._/-]{0,127}$", "u");
const pattern31 = new RegExp("^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,256}$", "u");
const pattern35 = new RegExp("^/[^\\s?#%\\\\]*$", "u");

function validate41(data, {instancePath="", parentData, parentDataProperty, rootData=data, dynamicAnchors={}}={}){
let vErrors = null;
let errors = 0;
const evaluated0 = validate41.evaluated;
if(evaluated0.dynamicProps){
evaluated0.props = undefined;
}
if(evaluated0.dynamicItems){
evaluated0.items = undefined;
}
if(data && typeof data == "object" && !Array.isArray(data)){
if(data.ref === undefined){
const err0 = {instancePath,schemaPath:"#/required",keyword:"required",params:{missingProperty: "ref"},message:"must have required property '"+"ref"+"'"};
if(vErrors === null){
vErrors = [err0];
}
else {
vErrors.push(err0);
}
errors++;
}
if(data.hosts === undefined){
const err1 = {instancePath,schemaPath:"#/required",keyword:"required",params:{missingProperty: "hosts"},message:"must have required property '"+"hosts"+"'"};
if(vErrors === null){
vErrors = [err1];
}
else {
vErrors.push(err1);
}
errors++;
}
for(const key0 in data){
if(!(func1.call(schema70.properties, key0))){
const err2 = {instancePath,schemaPath:"#/additionalProperties",keyword:"additionalProperties",params:{additionalProperty: key0},message:"must NOT have additional properties"};
if(vErrors === null){
vErrors = [err2];
}
else {
vErrors.push(err2);
}
errors++;
}
}
if(data.ref !== undefined){
let data0 = data.ref;
if(typeof data0 === "string"){
if(!pattern30.test(data0)){
const err3 = {instancePath:instancePath+"/ref",schemaPath:"#/properties/ref/pattern",keyword:"pattern",params:{pattern: "^(secret|decrypt):[A-Za-z0-9][A-Za-z0-9._/-]{0,127}$"},message:"must match pattern \""+"^(secret|decrypt):[A-Za-z0-9][A-Za-z0-9._/-]{0,127}$"+"\""};
if(vErrors === null){
vErrors = [err3];
}
else {
vErrors.push(err3);
}
errors++;
}
}
else {
const err4 = {instancePath:instancePath+"/ref",schemaPath:"#/properties/ref/type",keyword:"type",params:{type: "string"},message:"must be string"};
if(vErrors === null){
vErrors = [err4];
}
else {
vErrors.push(err4);
}
errors++;
}
}
if(data.hosts !== undefined){
let data1 = data.hosts;
if(Array.isArray(data1)){
if(data1.length > 256){
const err5 = {instancePath:instancePath+"/hosts",schemaPath:"#/properties/hosts/maxItems",keyword:"maxItems",params:{limit: 256},message:"must NOT have more than 256 items"};
if(vErrors === null){
vErrors = [err5];
}
else {
vErrors.push(err5);
}
errors++;
}
const len0 = data1.length;
for(let i0=0; i0<len0; i0++){
let data2 = data1[i0];
if(typeof data2 === "string"){
if(func2(data2) > 300){
const err6 = {instancePath:instancePath+"/hosts/" + i0,schemaPath:"#/$defs/hostPattern/maxLength",keyword:"maxLength",params:{limit: 300},message:"must NOT have more than 300 characters"};
if(vErrors === null){
vErrors = [err6];
}
else {
vErrors.push(err6);
}
errors++;
}
if(func2(data2) < 1){
const err7 = {instancePath:instancePath+"/hosts/" + i0,schemaPath:"#/$defs/hostPattern/minLength",keyword:"minLength",params:{limit: 1},message:"must NOT have fewer than 1 characters"};
if(vErrors === null){
vErrors = [err7];
}
else {
vErrors.push(err7);
}
errors++;
}
}
else {
const err8 = {instancePath:instancePath+"/hosts/" + i0,schemaPath:"#/$defs/hostPattern/type",keyword:"type",params:{type: "string"},message:"must be string"};
if(vErrors === null){
vErrors = [err8];
}
else {
vErrors.push(err8);
}
errors++;
}
}
}
else {
const err9 = {instancePath:instancePath+"/hosts",schemaPath:"#/properties/hosts/type",keyword:"type",params:{type: "array"},message:"must be array"};
if(vErrors === null){
vErrors = [err9];
}
else {
vErrors.push(err9);
}
errors++;
}
}
if(data.delivery !== undefined){
let data3 = data.delivery;
if(!((data3 === "env") || (data3 === "inject"))){
const err10 = {instancePath:instancePath+"/delivery",schemaPath:"#/properties/delivery/enum",keyword:"enum",params:{allowedValues: schema70.properties.delivery.enum},message:"must be equal to one of the allowed values"};
if(vErrors === null){
vErrors = [err10];
}
else {
vErrors.push(err10);
}
errors++;
}
}
if(data.headers !== undefined){
let data4 = data.headers;
if(Array.isArray(data4)){
if(data4.length > 64){
const err11 = {instancePath:instancePath+"/headers",schemaPath:"#/properties/headers/maxItems",keyword:"maxItems",params:{limit: 64},message:"must NOT have more than 64 items"};
if(vErrors === null){
vErrors = [err11];
}
else {
vErrors.push(err11);
}
errors++;
}
const len1 = data4.length;
for(let i1=0; i1<len1; i1++){
let data5 = data4[i1];
if(typeof data5 === "string"){
if(!pattern31.test(data5)){
const err12 = {instancePath:instancePath+"/headers/" + i1,schemaPath:"#/$defs/httpToken/pattern",keyword:"pattern",params:{pattern: "^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,256}$"},message:"must match pattern \""+"^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,256}$"+"\""};
if(vErrors === null){
vErrors = [err12];
}
else {
vErrors.push(err12);
}
errors++;
}
}
else {
const err13 = {instancePath:instancePath+"/headers/" + i1,schemaPath:"#/$defs/httpToken/type",keyword:"type",params:{type: "string"},message:"must be string"};
if(vErrors === null){
vErrors = [err13];
}
else {
vErrors.push(err13);
}
errors++;
}
}
}
else {
const err14 = {instancePath:instancePath+"/headers",schemaPath:"#/properties/headers/type",keyword:"type",params:{type: "array"},message:"must be array"};
if(vErrors === null){
vErrors = [err14];
}
else {
vErrors.push(err14);
}
errors++;
}
}
if(data.query !== undefined){
let data6 = data.query;
if(Array.isArray(data6)){
if(data6.length > 64){
const err15 = {instancePath:instancePath+"/query",schemaPath:"#/properties/query/maxItems",keyword:"maxItems",params:{limit: 64},message:"must NOT have more than 64 items"};
if(vErrors === null){
vErrors = [err15];
}
else {
vErrors.push(err15);
}
errors++;
}
const len2 = data6.length;
for(let i2=0; i2<len2; i2++){
let data7 = data6[i2];
if(typeof data7 === "string"){
if(!pattern31.test(data7)){
const err16 = {instancePath:instancePath+"/query/" + i2,schemaPath:"#/$defs/httpToken/pattern",keyword:"pattern",params:{pattern: "^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,256}$"},message:"must match pattern \""+"^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,256}$"+"\""};
if(vErrors === null){
vErrors = [err16];
}
else {
vErrors.push(err16);
}
errors++;
}
}
else {
const err17 = {instancePath:instancePath+"/query/" + i2,schemaPath:"#/$defs/httpToken/type",keyword:"type",params:{type: "string"},message:"must be string"};
if(vErrors === null){
vErrors = [err17];
}
else {
vErrors.push(err17);
}
errors++;
}
}
}
else {
const err18 = {instancePath:instancePath+"/query",schemaPath:"#/properties/query/type",keyword:"type",params:{type: "array"},message:"must be array"};
if(vErrors === null){
vErrors = [err18];
}
else {
vErrors.push(err18);
}
errors++;
}
}
if(data.cookies !== undefined){
let data8 = data.cookies;
if(Array.isArray(data8)){
if(data8.length > 64){
const err19 = {instancePath:instancePath+"/cookies",schemaPath:"#/properties/cookies/maxItems",keyword:"maxItems",params:{limit: 64},message:"must NOT have more than 64 items"};
if(vErrors === null){
vErrors = [err19];
}
else {
vErrors.push(err19);
}
errors++;
}
const len3 = data8.length;
for(let i3=0; i3<len3; i3++){
let data9 = data8[i3];
if(typeof data9 === "string"){
if(!pattern31.test(data9)){
const err20 = {instancePath:instancePath+"/cookies/" + i3,schemaPath:"#/$defs/httpToken/pattern",keyword:"pattern",params:{pattern: "^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,256}$"},message:"must match pattern \""+"^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,256}$"+"\""};
if(vErrors === null){
vErrors = [err20];
}
else {
vErrors.push(err20);
}
errors++;
}
}
else {
const err21 = {instancePath:instancePath+"/cookies/" + i3,schemaPath:"#/$defs/httpToken/type",keyword:"type",params:{type: "string"},message:"must be string"};
if(vErrors === null){
vErrors = [err21];
}
else {
vErrors.push(err21);
}
errors++;
}
}
}
else {
const err22 = {instancePath:instancePath+"/cookies",schemaPath:"#/properties/cookies/type",keyword:"type",params:{type: "array"},message:"must be array"};
if(vErrors === null){
vErrors = [err22];
}
else {
vErrors.push(err22);
}
errors++;
}
}
if(data.path !== undefined){
if(typeof data.path !== "boolean"){
const err23 = {instancePath:instancePath+"/path",schemaPath:"#/properties/path/type",keyword:"type",params:{type: "boolean"},message:"must be boolean"};
if(vErrors === null){
vErrors = [err23];
}
else {
vErrors.push(err23);
}
errors++;
}
}
if(data.body !== undefined){
if(typeof data.body !== "boolean"){
const err24 = {instancePath:instancePath+"/body",schemaPath:"#/properties/body/type",keyword:"type",params:{type: "boolean"},message:"must be boolean"};
if(vErrors === null){
vErrors = [err24];
}
else {
vErrors.push(err24);
}
errors++;
}
}
if(data.methods !== undefined){
let data12 = data.methods;
if(Array.isArray(data12)){
if(data12.length > 32){
const err25 = {instancePath:instancePath+"/methods",schemaPath:"#/properties/methods/maxItems",keyword:"maxItems",params:{limit: 32},message:"must NOT have more than 32 items"};
if(vErrors === null){
vErrors = [err25];
}
else {
vErrors.push(err25);
}
errors++;
}
if(data12.length < 1){
const err26 = {instancePath:instancePath+"/methods",schemaPath:"#/properties/methods/minItems",keyword:"minItems",params:{limit: 1},message:"must NOT have fewer than 1 items"};
if(vErrors === null){
vErrors = [err26];
}
else {
vErrors.push(err26);
}
errors++;
}
const len4 = data12.length;
for(let i4=0; i4<len4; i4++){
let data13 = data12[i4];
if(typeof data13 === "string"){
if(!pattern31.test(data13)){
const err27 = {instancePath:instancePath+"/methods/" + i4,schemaPath:"#/$defs/httpToken/pattern",keyword:"pattern",params:{pattern: "^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,256}$"},message:"must match pattern \""+"^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,256}$"+"\""};
if(vErrors === null){
vErrors = [err27];
}
else {
vErrors.push(err27);
}
errors++;
}
}
else {
const err28 = {instancePath:instancePath+"/methods/" + i4,schemaPath:"#/$defs/httpToken/type",keyword:"type",params:{type: "string"},message:"must be string"};
if(vErrors === null){
vErrors = [err28];
}
else {
vErrors.push(err28);
}
errors++;
}
}
}
else {
const err29 = {instancePath:instancePath+"/methods",schemaPath:"#/properties/methods/type",keyword:"type",params:{type: "array"},message:"must be array"};
if(vErrors === null){
vErrors = [err29];
}
else {
vErrors.push(err29);
}
errors++;
}
}
if(data.paths !== undefined){
let data14 = data.paths;
if(Array.isArray(data14)){
if(data14.length > 256){
const err30 = {instancePath:instancePath+"/paths",schemaPath:"#/properties/paths/maxItems",keyword:"maxItems",params:{limit: 256},message:"must NOT have more than 256 items"};
if(vErrors === null){
vErrors = [err30];
}
else {
vErrors.push(err30);
}
errors++;
}
if(data14.length < 1){
const err31 = {instancePath:instancePath+"/paths",schemaPath:"#/properties/paths/minItems",keyword:"minItems",params:{limit: 1},message:"must NOT have fewer than 1 items"};
if(vErrors === null){
vErrors = [err31];
}
else {
vErrors.push(err31);
}
errors++;
}
const len5 = data14.length;
for(let i5=0; i5<len5; i5++){
let data15 = data14[i5];
if(typeof data15 === "string"){
if(func2(data15) > 1024){
const err32 = {instancePath:instancePath+"/paths/" + i5,schemaPath:"#/properties/paths/items/maxLength",keyword:"maxLength",params:{limit: 1024},message:"must NOT have more than 1024 characters"};
if(vErrors === null){
vErrors = [err32];
}
else {
vErrors.push(err32);
}
errors++;
}
if(!pattern35.test(data15)){
const err33 = {instancePath:instancePath+"/paths/" + i5,schemaPath:"#/properties/paths/items/pattern",keyword:"pattern",params:{pattern: "^/[^\\s?#%\\\\]*$"},message:"must match pattern \""+"^/[^\\s?#%\\\\]*$"+"\""};
if(vErrors === null){
vErrors = [err33];
}
else {
vErrors.push(err33);
}
errors++;
}
}
else {
const err34 = {instancePath:instancePath+"/paths/" + i5,schemaPath:"#/properties/paths/items/type",keyword:"type",params:{type: "string"},message:"must be string"};
if(vErrors === null){
vErrors = [err34];
}
else {
vErrors.push(err34);
}
errors++;
}
}
}
else {
const err35 = {instancePath:instancePath+"/paths",schemaPath:"#/properties/paths/type",keyword:"type",params:{type: "array"},message:"must be array"};
if(vErrors === null){
vErrors = [err35];
}
else {
vErrors.push(err35);
}
errors++;
}
}
if(data.http !== undefined){
let data16 = data.http;
if(Array.isArray(data16)){
if(data16.length > 64){
const err36 = {instancePath:instancePath+"/http",schemaPath:"#/properties/http/maxItems",keyword:"maxItems",params:{limit: 64},message:"must NOT have more than 64 items"};
if(vErrors === null){
vErrors = [err36];
}
else {
vErrors.push(err36);
}
errors++;
}
const len6 = data16.length;
for(let i6=0; i6<len6; i6++){
let data17 = data16[i6];
if(typeof data17 === "string"){
if(func2(data17) > 300){
const err37 = {instancePath:instancePath+"/http/" + i6,schemaPath:"#/$defs/hostPattern/maxLength",keyword:"maxLength",params:{limit: 300},message:"must NOT have more than 300 characters"};
if(vErrors === null){
vErrors = [err37];
}
else {
vErrors.push(err37);
}
errors++;
}
if(func2(data17) < 1){
const err38 = {instancePath:instancePath+"/http/" + i6,schemaPath:"#/$defs/hostPattern/minLength",keyword:"minLength",params:{limit: 1},message:"must NOT have fewer than 1 characters"};
if(vErrors === null){
vErrors = [err38];
}
else {
vErrors.push(err38);
}
errors++;
}
}
else {
const err39 = {instancePath:instancePath+"/http/" + i6,schemaPath:"#/$defs/hostPattern/type",keyword:"type",params:{type: "string"},message:"must be string"};
if(vErrors === null){
vErrors = [err39];
}
else {
vErrors.push(err39);
}
errors++;
}
}
}
else {
const err40 = {instancePath:instancePath+"/http",schemaPath:"#/properties/http/type",keyword:"type",params:{type: "array"},message:"must be array"};
if(vErrors === null){
vErrors = [err40];
}
else {
vErrors.push(err40);
}
errors++;
}
}
if(data.responses !== undefined){
let data18 = data.responses;
if(!((data18 === "decode") || (data18 === "identity"))){
const err41 = {instancePath:instancePath+"/responses",schemaPath:"#/properties/responses/enum",keyword:"enum",params:{allowedValues: schema70.properties.responses.enum},message:"must be equal to one of the allowed values"};
if(vErrors === null){
vErrors = [err41];
}
else {
vErrors.push(err41);
}
errors++;
}
}
}
else {
const err42 = {instancePath,schemaPath:"#/type",keyword:"type",params:{type: "object"},message:"must be object"};
if(vErrors === null){
vErrors = [err42];
}
else {
vErrors.push(err42);
}
errors++;
}
validate41.errors = vErrors;
return errors === 0;
}
validate41.evaluated = {"props":true,"dynamicProps":false,"dynamicItems":false};


function validate38(data, {instancePath="", parentData, parentDataProperty, rootData=data, dynamicAnchors={}}={}){
let vErrors = null;
let errors = 0;
const evaluated0 = validate38.evaluated;
if(evaluated0.dynamicProps){
evaluated0.props = undefined;
}
if(evaluated0.dynamicItems){
evaluated0.items = undefined;
}
if(data && typeof data == "object" && !Array.isArray(data)){
for(const key0 in data){
if(!((((((key0 === "alias") || (key0 === "minLength")) || (key0 === "allow")) || (key0 === "restrict")) || (key0 === "unknown")) || (key0 === "bind"))){
const err0 = {instancePath,schemaPath:"#/additionalProperties",keyword:"additionalProperties",params:{additionalProperty: key0},message:"must NOT have additional properties"};
if(vErrors === null){
vErrors = [err0];
}
else {
vErrors.push(err0);
}
errors++;
}
}
if(data.alias !== undefined){
if(typeof data.alias !== "boolean"){
const err1 = {instancePath:instancePath+"/alias",schemaPath:"#/properties/alias/type",keyword:"type",params:{type: "boolean"},message:"must be boolean"};
if(vErrors === null){
vErrors = [err1];
}
else {
vErrors.push(err1);
}
errors++;
}
}
if(data.minLength !== undefined){
let data1 = data.minLength;
if(!(((typeof data1 == "number") && (!(data1 % 1) && !isNaN(data1))) && (isFinite(data1)))){
const err2 = {instancePath:instancePath+"/minLength",schemaPath:"#/properties/minLength/type",keyword:"type",params:{type: "integer"},message:"must be integer"};
if(vErrors === null){
vErrors = [err2];
}
else {
vErrors.push(err2);
}
errors++;
}
if((typeof data1 == "number") && (isFinite(data1))){
if(data1 > 1024 || isNaN(data1)){
const err3 = {instancePath:instancePath+"/minLength",schemaPath:"#/properties/minLength/maximum",keyword:"maximum",params:{comparison: "<=", limit: 1024},message:"must be <= 1024"};
if(vErrors === null){
vErrors = [err3];
}
else {
vErrors.push(err3);
}
errors++;
}
if(data1 < 1 || isNaN(data1)){
const err4 = {instancePath:instancePath+"/minLength",schemaPath:"#/properties/minLength/minimum",keyword:"minimum",params:{comparison: ">=", limit: 1},message:"must be >= 1"};
if(vErrors === null){
vErrors = [err4];
}
else {
vErrors.push(err4);
}
errors++;
}
}
}
if(data.allow !== undefined){
let data2 = data.allow;
if(Array.isArray(data2)){
if(data2.length > 1024){
const err5 = {instancePath:instancePath+"/allow",schemaPath:"#/properties/allow/maxItems",keyword:"maxItems",params:{limit: 1024},message:"must NOT have more than 1024 items"};
if(vErrors === null){
vErrors = [err5];
}
else {
vErrors.push(err5);
}
errors++;
}
const len0 = data2.length;
for(let i0=0; i0<len0; i0++){
let data3 = data2[i0];
if(typeof data3 === "string"){
if(!pattern23.test(data3)){
const err6 = {instancePath:instancePath+"/allow/" + i0,schemaPath:"#/$defs/refPattern/pattern",keyword:"pattern",params:{pattern: "^(secret|decrypt):[A-Za-z0-9._/*-]{1,128}$"},message:"must match pattern \""+"^(secret|decrypt):[A-Za-z0-9._/*-]{1,128}$"+"\""};
if(vErrors === null){
vErrors = [err6];
}
else {
vErrors.push(err6);
}
errors++;
}
}
else {
const err7 = {instancePath:instancePath+"/allow/" + i0,schemaPath:"#/$defs/refPattern/type",keyword:"type",params:{type: "string"},message:"must be string"};
if(vErrors === null){
vErrors = [err7];
}
else {
vErrors.push(err7);
}
errors++;
}
}
let i1 = data2.length;
let j0;
if(i1 > 1){
outer0:
for(;i1--;){
for(j0 = i1; j0--;){
if(func0(data2[i1], data2[j0])){
const err8 = {instancePath:instancePath+"/allow",schemaPath:"#/properties/allow/uniqueItems",keyword:"uniqueItems",params:{i: i1, j: j0},message:"must NOT have duplicate items (items ## "+j0+" and "+i1+" are identical)"};
if(vErrors === null){
vErrors = [err8];
}
else {
vErrors.push(err8);
}
errors++;
break outer0;
}
}
}
}
}
else {
const err9 = {instancePath:instancePath+"/allow",schemaPath:"#/properties/allow/type",keyword:"type",params:{type: "array"},message:"must be array"};
if(vErrors === null){
vErrors = [err9];
}
else {
vErrors.push(err9);
}
errors++;
}
}
if(data.restrict !== undefined){
let data4 = data.restrict;
if(Array.isArray(data4)){
if(data4.length > 1024){
const err10 = {instancePath:instancePath+"/restrict",schemaPath:"#/properties/restrict/maxItems",keyword:"maxItems",params:{limit: 1024},message:"must NOT have more than 1024 items"};
if(vErrors === null){
vErrors = [err10];
}
else {
vErrors.push(err10);
}
errors++;
}
const len1 = data4.length;
for(let i2=0; i2<len1; i2++){
if(!(validate39(data4[i2], {instancePath:instancePath+"/restrict/" + i2,parentData:data4,parentDataProperty:i2,rootData,dynamicAnchors}))){
vErrors = vErrors === null ? validate39.errors : vErrors.concat(validate39.errors);
errors = vErrors.length;
}
}
}
else {
const err11 = {instancePath:instancePath+"/restrict",schemaPath:"#/properties/restrict/type",keyword:"type",params:{type: "array"},message:"must be array"};
if(vErrors === null){
vErrors = [err11];
}
else {
vErrors.push(err11);
}
errors++;
}
}
if(data.unknown !== undefined){
let data6 = data.unknown;
if(!(((data6 === "literal") || (data6 === "warn")) || (data6 === "deny"))){
const err12 = {instancePath:instancePath+"/unknown",schemaPath:"#/properties/unknown/enum",keyword:"enum",params:{allowedValues: schema59.properties.unknown.enum},message:"must be equal to one of the allowed values"};
if(vErrors === null){
vErrors = [err12];
}
else {
vErrors.push(err12);
}
errors++;
}
}
if(data.bind !== undefined){
let data7 = data.bind;
if(Array.isArray(data7)){
if(data7.length > 1024){
const err13 = {instancePath:instancePath+"/bind",schemaPath:"#/properties/bind/maxItems",keyword:"maxItems",params:{limit: 1024},message:"must NOT have more than 1024 items"};
if(vErrors === null){
vErrors = [err13];
}
else {
vErrors.push(err13);
}
errors++;
}
const len2 = data7.length;
for(let i3=0; i3<len2; i3++){
if(!(validate41(data7[i3], {instancePath:instancePath+"/bind/" + i3,parentData:data7,parentDataProperty:i3,rootData,dynamicAnchors}))){
vErrors = vErrors === null ? validate41.errors : vErrors.concat(validate41.errors);
errors = vErrors.length;
}
}
}
else {
const err14 = {instancePath:instancePath+"/bind",schemaPath:"#/properties/bind/type",keyword:"type",params:{type: "array"},message:"must be array"};
if(vErrors === null){
vErrors = [err14];
}
else {
vErrors.push(err14);
}
errors++;
}
}
}
else {
const err15 = {instancePath,schemaPath:"#/type",keyword:"type",params:{type: "object"},message:"must be object"};
if(vErrors === null){
vErrors = [err15];
}
else {
vErrors.push(err15);
}
errors++;
}
validate38.errors = vErrors;
return errors === 0;
}
validate38.evaluated = {"props":true,"dynamicProps":false,"dynamicItems":false};

const schema77 = {"type":"object","additionalProperties":false,"description":"The audit log: where it goes and what it records. Read when the gateway starts.","properties":{"enabled":{"type":"boolean","description":"Write the audit log (default true)."},"path":{"title":"an absolute file path, or one starting with `~/`","type":"string","pattern":"^(/|~/)[^\\u0000]*$","description":"The audit log file; default $EXECGATE_HOME/audit.log."},"destination":{"enum":["file","stdout"],"description":"`file` (default): JSON lines in `path`. `stdout`: the gateway's standard output (for a log collector); the hash chain is kept either way."},"maxBytes":{"$ref":"#/$defs/size","description":"Rotate the audit file before it would exceed this size; 0 turns rotation off. Default 64MiB."},"maxFiles":{"type":"integer","minimum":0,"maximum":100000,"description":"Rotated audit files kept (oldest removed first); 0 keeps all. Default 0."},"fsync":{"enum":["always","before-spawn","never"],"description":"When records are flushed to disk: after every record, before anything is spawned (default), or never (the OS decides)."},"fingerprints":{"type":"boolean","description":"Record a keyed fingerprint of each resolved value (never the value)."},"env":{"type":"boolean","description":"Record the names of variables removed or withheld from each run."}}};
const pattern36 = new RegExp("^(/|~/)[^\\u0000]*$", "u");

function validate44(data, {instancePath="", parentData, parentDataProperty, rootData=data, dynamicAnchors={}}={}){
let vErrors = null;
let errors = 0;
const evaluated0 = validate44.evaluated;
if(evaluated0.dynamicProps){
evaluated0.props = undefined;
}
if(evaluated0.dynamicItems){
evaluated0.items = undefined;
}
if(data && typeof data == "object" && !Array.isArray(data)){
for(const key0 in data){
if(!((((((((key0 === "enabled") || (key0 === "path")) || (key0 === "destination")) || (key0 === "maxBytes")) || (key0 === "maxFiles")) || (key0 === "fsync")) || (key0 === "fingerprints")) || (key0 === "env"))){
const err0 = {instancePath,schemaPath:"#/additionalProperties",keyword:"additionalProperties",params:{additionalProperty: key0},message:"must NOT have additional properties"};
if(vErrors === null){
vErrors = [err0];
}
else {
vErrors.push(err0);
}
errors++;
}
}
if(data.enabled !== undefined){
if(typeof data.enabled !== "boolean"){
const err1 = {instancePath:instancePath+"/enabled",schemaPath:"#/properties/enabled/type",keyword:"type",params:{type: "boolean"},message:"must be boolean"};
if(vErrors === null){
vErrors = [err1];
}
else {
vErrors.push(err1);
}
errors++;
}
}
if(data.path !== undefined){
let data1 = data.path;
if(typeof data1 === "string"){
if(!pattern36.test(data1)){
const err2 = {instancePath:instancePath+"/path",schemaPath:"#/properties/path/pattern",keyword:"pattern",params:{pattern: "^(/|~/)[^\\u0000]*$"},message:"must match pattern \""+"^(/|~/)[^\\u0000]*$"+"\""};
if(vErrors === null){
vErrors = [err2];
}
else {
vErrors.push(err2);
}
errors++;
}
}
else {
const err3 = {instancePath:instancePath+"/path",schemaPath:"#/properties/path/type",keyword:"type",params:{type: "string"},message:"must be string"};
if(vErrors === null){
vErrors = [err3];
}
else {
vErrors.push(err3);
}
errors++;
}
}
if(data.destination !== undefined){
let data2 = data.destination;
if(!((data2 === "file") || (data2 === "stdout"))){
const err4 = {instancePath:instancePath+"/destination",schemaPath:"#/properties/destination/enum",keyword:"enum",params:{allowedValues: schema77.properties.destination.enum},message:"must be equal to one of the allowed values"};
if(vErrors === null){
vErrors = [err4];
}
else {
vErrors.push(err4);
}
errors++;
}
}
if(data.maxBytes !== undefined){
let data3 = data.maxBytes;
const _errs9 = errors;
let valid2 = false;
const _errs10 = errors;
if(!(((typeof data3 == "number") && (!(data3 % 1) && !isNaN(data3))) && (isFinite(data3)))){
const err5 = {instancePath:instancePath+"/maxBytes",schemaPath:"#/$defs/size/anyOf/0/type",keyword:"type",params:{type: "integer"},message:"must be integer"};
if(vErrors === null){
vErrors = [err5];
}
else {
vErrors.push(err5);
}
errors++;
}
if((typeof data3 == "number") && (isFinite(data3))){
if(data3 < 0 || isNaN(data3)){
const err6 = {instancePath:instancePath+"/maxBytes",schemaPath:"#/$defs/size/anyOf/0/minimum",keyword:"minimum",params:{comparison: ">=", limit: 0},message:"must be >= 0"};
if(vErrors === null){
vErrors = [err6];
}
else {
vErrors.push(err6);
}
errors++;
}
}
var _valid0 = _errs10 === errors;
valid2 = valid2 || _valid0;
const _errs12 = errors;
if(typeof data3 === "string"){
if(!pattern10.test(data3)){
const err7 = {instancePath:instancePath+"/maxBytes",schemaPath:"#/$defs/size/anyOf/1/pattern",keyword:"pattern",params:{pattern: "^[0-9]+(\\.[0-9]+)?\\s*(B|KB|KiB|MB|MiB|GB|GiB)$"},message:"must match pattern \""+"^[0-9]+(\\.[0-9]+)?\\s*(B|KB|KiB|MB|MiB|GB|GiB)$"+"\""};
if(vErrors === null){
vErrors = [err7];
}
else {
vErrors.push(err7);
}
errors++;
}
}
else {
const err8 = {instancePath:instancePath+"/maxBytes",schemaPath:"#/$defs/size/anyOf/1/type",keyword:"type",params:{type: "string"},message:"must be string"};
if(vErrors === null){
vErrors = [err8];
}
else {
vErrors.push(err8);
}
errors++;
}
var _valid0 = _errs12 === errors;
valid2 = valid2 || _valid0;
if(!valid2){
const err9 = {instancePath:instancePath+"/maxBytes",schemaPath:"#/$defs/size/anyOf",keyword:"anyOf",params:{},message:"must match a schema in anyOf"};
if(vErrors === null){
vErrors = [err9];
}
else {
vErrors.push(err9);
}
errors++;
}
else {
errors = _errs9;
if(vErrors !== null){
if(_errs9){
vErrors.length = _errs9;
}
else {
vErrors = null;
}
}
}
}
if(data.maxFiles !== undefined){
let data4 = data.maxFiles;
if(!(((typeof data4 == "number") && (!(data4 % 1) && !isNaN(data4))) && (isFinite(data4)))){
const err10 = {instancePath:instancePath+"/maxFiles",schemaPath:"#/properties/maxFiles/type",keyword:"type",params:{type: "integer"},message:"must be integer"};
if(vErrors === null){
vErrors = [err10];
}
else {
vErrors.push(err10);
}
errors++;
}
if((typeof data4 == "number") && (isFinite(data4))){
if(data4 > 100000 || isNaN(data4)){
const err11 = {instancePath:instancePath+"/maxFiles",schemaPath:"#/properties/maxFiles/maximum",keyword:"maximum",params:{comparison: "<=", limit: 100000},message:"must be <= 100000"};
if(vErrors === null){
vErrors = [err11];
}
else {
vErrors.push(err11);
}
errors++;
}
if(data4 < 0 || isNaN(data4)){
const err12 = {instancePath:instancePath+"/maxFiles",schemaPath:"#/properties/maxFiles/minimum",keyword:"minimum",params:{comparison: ">=", limit: 0},message:"must be >= 0"};
if(vErrors === null){
vErrors = [err12];
}
else {
vErrors.push(err12);
}
errors++;
}
}
}
if(data.fsync !== undefined){
let data5 = data.fsync;
if(!(((data5 === "always") || (data5 === "before-spawn")) || (data5 === "never"))){
const err13 = {instancePath:instancePath+"/fsync",schemaPath:"#/properties/fsync/enum",keyword:"enum",params:{allowedValues: schema77.properties.fsync.enum},message:"must be equal to one of the allowed values"};
if(vErrors === null){
vErrors = [err13];
}
else {
vErrors.push(err13);
}
errors++;
}
}
if(data.fingerprints !== undefined){
if(typeof data.fingerprints !== "boolean"){
const err14 = {instancePath:instancePath+"/fingerprints",schemaPath:"#/properties/fingerprints/type",keyword:"type",params:{type: "boolean"},message:"must be boolean"};
if(vErrors === null){
vErrors = [err14];
}
else {
vErrors.push(err14);
}
errors++;
}
}
if(data.env !== undefined){
if(typeof data.env !== "boolean"){
const err15 = {instancePath:instancePath+"/env",schemaPath:"#/properties/env/type",keyword:"type",params:{type: "boolean"},message:"must be boolean"};
if(vErrors === null){
vErrors = [err15];
}
else {
vErrors.push(err15);
}
errors++;
}
}
}
else {
const err16 = {instancePath,schemaPath:"#/type",keyword:"type",params:{type: "object"},message:"must be object"};
if(vErrors === null){
vErrors = [err16];
}
else {
vErrors.push(err16);
}
errors++;
}
validate44.errors = vErrors;
return errors === 0;
}
validate44.evaluated = {"props":true,"dynamicProps":false,"dynamicItems":false};

const schema79 = {"type":"object","additionalProperties":false,"description":"The OS sandbox every run starts in (Linux: bubblewrap): its own user (no nested ones), PID, mount, IPC, UTS and network namespaces and a seccomp filter; the state directory, the audit log, the session bus and credential paths hidden; the file system read-only except the workspace (`cwd.roots`, else the gateway's working directory), a private /tmp and `filesystem.writable`; the mounts checked against the plan before the command starts.","properties":{"mode":{"enum":["required","auto","off"],"description":"`required`: a run that cannot be sandboxed is refused (EXECGATE_ERR_SANDBOX_UNAVAILABLE) and nothing runs. `auto` (default): sandboxed wherever the platform allows, otherwise the run goes ahead unsandboxed and its result, its audit record and a one-time warning say why. `off`: never sandboxed."},"helper":{"title":"an absolute path to the bubblewrap executable","type":"string","pattern":"^/[^\\u0000]*$","description":"The bubblewrap executable; default the first `bwrap` in /usr/bin, /usr/local/bin, /bin."},"network":{"anyOf":[{"enum":["none","open"],"description":"Every run gets a private network namespace with loopback only, shared by the runs of one gateway (a server one run starts on 127.0.0.1 is reachable from the next); the host's loopback services, abstract UNIX sockets (a D-Bus session bus) and the gateway's own sockets are out of reach. `open` (default): every public host through the gateway's egress proxy. `none`: nothing leaves."},{"$ref":"#/$defs/network"}],"description":"`open` or `none` (see above), or an egress policy `{mode: open|none|allowlist, allow, deny}` for the gateway's egress proxy."},"filesystem":{"type":"object","additionalProperties":false,"description":"What a run sees of the file system.","properties":{"hidden":{"$ref":"#/$defs/sandboxPaths","description":"Paths that are empty (directories) or unreadable (files) inside the sandbox. Added to the built-in credential list (~/.ssh, ~/.aws, ~/.gnupg, ~/.kube, ...) and to what is always hidden (the state directory, the audit log, the session bus). A path that does not exist is skipped."},"writable":{"$ref":"#/$defs/sandboxPaths","description":"Paths writable inside the sandbox besides the workspace (`cwd.roots`, else the gateway's working directory) and the private /tmp. Replaced whole by a policy that extends this one. A path that does not exist is skipped; a hidden path stays hidden; /tmp itself cannot be one."},"readOnly":{"$ref":"#/$defs/sandboxPaths","description":"Paths kept read-only even inside a writable root (a repository's .git/hooks, say). A path that does not exist is skipped."}}}}};
const pattern38 = new RegExp("^/[^\\u0000]*$", "u");
const schema80 = {"type":"object","additionalProperties":false,"description":"What a sandboxed run may reach. The run has no network interface but loopback in `none` and `allowlist`; traffic leaves only through the gateway's egress proxy, which decides by host name and refuses names resolving to loopback, link-local, metadata or this host's addresses.","properties":{"mode":{"enum":["open","none","allowlist"],"description":"`open`: every host not denied; `none`: nothing leaves the run; `allowlist`: only hosts matching `allow` (and not `deny`)."},"allow":{"type":"array","maxItems":1024,"items":{"$ref":"#/$defs/hostPattern"},"description":"Host patterns that may be reached in `allowlist` mode. An IP literal is reachable (in any mode) only when a pattern names it."},"deny":{"type":"array","maxItems":1024,"items":{"$ref":"#/$defs/hostPattern"},"description":"Host patterns never reached; deny wins over allow. Lists from extended policies are combined."},"upstream":{"type":"object","additionalProperties":false,"description":"How the egress proxy's own connections leave the gateway. Default: as the gateway's own environment says (`HTTPS_PROXY` for tunnels and TLS, `HTTP_PROXY` for plain HTTP, `NO_PROXY`), with the system's CAs.","properties":{"proxy":{"type":"string","maxLength":2048,"description":"A parent proxy, `http://host:port` (credentials are better given in the gateway's `HTTPS_PROXY` than in a policy file), or `direct` to ignore the gateway's proxy variables. Its credentials never enter a sandbox."},"noProxy":{"type":"array","maxItems":1024,"items":{"type":"string","minLength":1,"maxLength":300},"description":"Hosts reached without the parent proxy, as in `NO_PROXY`: a name covers its subdomains, `*` covers everything. Default: the gateway's `NO_PROXY`."},"ca":{"type":"array","maxItems":64,"items":{"type":"string","pattern":"^/","maxLength":4096},"description":"Absolute paths of PEM files with CA certificates the proxy trusts for upstream TLS, on top of the system's (a company's private CA)."}}}}};
const pattern39 = new RegExp("^/", "u");

function validate47(data, {instancePath="", parentData, parentDataProperty, rootData=data, dynamicAnchors={}}={}){
let vErrors = null;
let errors = 0;
const evaluated0 = validate47.evaluated;
if(evaluated0.dynamicProps){
evaluated0.props = undefined;
}
if(evaluated0.dynamicItems){
evaluated0.items = undefined;
}
if(data && typeof data == "object" && !Array.isArray(data)){
for(const key0 in data){
if(!((((key0 === "mode") || (key0 === "allow")) || (key0 === "deny")) || (key0 === "upstream"))){
const err0 = {instancePath,schemaPath:"#/additionalProperties",keyword:"additionalProperties",params:{additionalProperty: key0},message:"must NOT have additional properties"};
if(vErrors === null){
vErrors = [err0];
}
else {
vErrors.push(err0);
}
errors++;
}
}
if(data.mode !== undefined){
let data0 = data.mode;
if(!(((data0 === "open") || (data0 === "none")) || (data0 === "allowlist"))){
const err1 = {instancePath:instancePath+"/mode",schemaPath:"#/properties/mode/enum",keyword:"enum",params:{allowedValues: schema80.properties.mode.enum},message:"must be equal to one of the allowed values"};
if(vErrors === null){
vErrors = [err1];
}
else {
vErrors.push(err1);
}
errors++;
}
}
if(data.allow !== undefined){
let data1 = data.allow;
if(Array.isArray(data1)){
if(data1.length > 1024){
const err2 = {instancePath:instancePath+"/allow",schemaPath:"#/properties/allow/maxItems",keyword:"maxItems",params:{limit: 1024},message:"must NOT have more than 1024 items"};
if(vErrors === null){
vErrors = [err2];
}
else {
vErrors.push(err2);
}
errors++;
}
const len0 = data1.length;
for(let i0=0; i0<len0; i0++){
let data2 = data1[i0];
if(typeof data2 === "string"){
if(func2(data2) > 300){
const err3 = {instancePath:instancePath+"/allow/" + i0,schemaPath:"#/$defs/hostPattern/maxLength",keyword:"maxLength",params:{limit: 300},message:"must NOT have more than 300 characters"};
if(vErrors === null){
vErrors = [err3];
}
else {
vErrors.push(err3);
}
errors++;
}
if(func2(data2) < 1){
const err4 = {instancePath:instancePath+"/allow/" + i0,schemaPath:"#/$defs/hostPattern/minLength",keyword:"minLength",params:{limit: 1},message:"must NOT have fewer than 1 characters"};
if(vErrors === null){
vErrors = [err4];
}
else {
vErrors.push(err4);
}
errors++;
}
}
else {
const err5 = {instancePath:instancePath+"/allow/" + i0,schemaPath:"#/$defs/hostPattern/type",keyword:"type",params:{type: "string"},message:"must be string"};
if(vErrors === null){
vErrors = [err5];
}
else {
vErrors.push(err5);
}
errors++;
}
}
}
else {
const err6 = {instancePath:instancePath+"/allow",schemaPath:"#/properties/allow/type",keyword:"type",params:{type: "array"},message:"must be array"};
if(vErrors === null){
vErrors = [err6];
}
else {
vErrors.push(err6);
}
errors++;
}
}
if(data.deny !== undefined){
let data3 = data.deny;
if(Array.isArray(data3)){
if(data3.length > 1024){
const err7 = {instancePath:instancePath+"/deny",schemaPath:"#/properties/deny/maxItems",keyword:"maxItems",params:{limit: 1024},message:"must NOT have more than 1024 items"};
if(vErrors === null){
vErrors = [err7];
}
else {
vErrors.push(err7);
}
errors++;
}
const len1 = data3.length;
for(let i1=0; i1<len1; i1++){
let data4 = data3[i1];
if(typeof data4 === "string"){
if(func2(data4) > 300){
const err8 = {instancePath:instancePath+"/deny/" + i1,schemaPath:"#/$defs/hostPattern/maxLength",keyword:"maxLength",params:{limit: 300},message:"must NOT have more than 300 characters"};
if(vErrors === null){
vErrors = [err8];
}
else {
vErrors.push(err8);
}
errors++;
}
if(func2(data4) < 1){
const err9 = {instancePath:instancePath+"/deny/" + i1,schemaPath:"#/$defs/hostPattern/minLength",keyword:"minLength",params:{limit: 1},message:"must NOT have fewer than 1 characters"};
if(vErrors === null){
vErrors = [err9];
}
else {
vErrors.push(err9);
}
errors++;
}
}
else {
const err10 = {instancePath:instancePath+"/deny/" + i1,schemaPath:"#/$defs/hostPattern/type",keyword:"type",params:{type: "string"},message:"must be string"};
if(vErrors === null){
vErrors = [err10];
}
else {
vErrors.push(err10);
}
errors++;
}
}
}
else {
const err11 = {instancePath:instancePath+"/deny",schemaPath:"#/properties/deny/type",keyword:"type",params:{type: "array"},message:"must be array"};
if(vErrors === null){
vErrors = [err11];
}
else {
vErrors.push(err11);
}
errors++;
}
}
if(data.upstream !== undefined){
let data5 = data.upstream;
if(data5 && typeof data5 == "object" && !Array.isArray(data5)){
for(const key1 in data5){
if(!(((key1 === "proxy") || (key1 === "noProxy")) || (key1 === "ca"))){
const err12 = {instancePath:instancePath+"/upstream",schemaPath:"#/properties/upstream/additionalProperties",keyword:"additionalProperties",params:{additionalProperty: key1},message:"must NOT have additional properties"};
if(vErrors === null){
vErrors = [err12];
}
else {
vErrors.push(err12);
}
errors++;
}
}
if(data5.proxy !== undefined){
let data6 = data5.proxy;
if(typeof data6 === "string"){
if(func2(data6) > 2048){
const err13 = {instancePath:instancePath+"/upstream/proxy",schemaPath:"#/properties/upstream/properties/proxy/maxLength",keyword:"maxLength",params:{limit: 2048},message:"must NOT have more than 2048 characters"};
if(vErrors === null){
vErrors = [err13];
}
else {
vErrors.push(err13);
}
errors++;
}
}
else {
const err14 = {instancePath:instancePath+"/upstream/proxy",schemaPath:"#/properties/upstream/properties/proxy/type",keyword:"type",params:{type: "string"},message:"must be string"};
if(vErrors === null){
vErrors = [err14];
}
else {
vErrors.push(err14);
}
errors++;
}
}
if(data5.noProxy !== undefined){
let data7 = data5.noProxy;
if(Array.isArray(data7)){
if(data7.length > 1024){
const err15 = {instancePath:instancePath+"/upstream/noProxy",schemaPath:"#/properties/upstream/properties/noProxy/maxItems",keyword:"maxItems",params:{limit: 1024},message:"must NOT have more than 1024 items"};
if(vErrors === null){
vErrors = [err15];
}
else {
vErrors.push(err15);
}
errors++;
}
const len2 = data7.length;
for(let i2=0; i2<len2; i2++){
let data8 = data7[i2];
if(typeof data8 === "string"){
if(func2(data8) > 300){
const err16 = {instancePath:instancePath+"/upstream/noProxy/" + i2,schemaPath:"#/properties/upstream/properties/noProxy/items/maxLength",keyword:"maxLength",params:{limit: 300},message:"must NOT have more than 300 characters"};
if(vErrors === null){
vErrors = [err16];
}
else {
vErrors.push(err16);
}
errors++;
}
if(func2(data8) < 1){
const err17 = {instancePath:instancePath+"/upstream/noProxy/" + i2,schemaPath:"#/properties/upstream/properties/noProxy/items/minLength",keyword:"minLength",params:{limit: 1},message:"must NOT have fewer than 1 characters"};
if(vErrors === null){
vErrors = [err17];
}
else {
vErrors.push(err17);
}
errors++;
}
}
else {
const err18 = {instancePath:instancePath+"/upstream/noProxy/" + i2,schemaPath:"#/properties/upstream/properties/noProxy/items/type",keyword:"type",params:{type: "string"},message:"must be string"};
if(vErrors === null){
vErrors = [err18];
}
else {
vErrors.push(err18);
}
errors++;
}
}
}
else {
const err19 = {instancePath:instancePath+"/upstream/noProxy",schemaPath:"#/properties/upstream/properties/noProxy/type",keyword:"type",params:{type: "array"},message:"must be array"};
if(vErrors === null){
vErrors = [err19];
}
else {
vErrors.push(err19);
}
errors++;
}
}
if(data5.ca !== undefined){
let data9 = data5.ca;
if(Array.isArray(data9)){
if(data9.length > 64){
const err20 = {instancePath:instancePath+"/upstream/ca",schemaPath:"#/properties/upstream/properties/ca/maxItems",keyword:"maxItems",params:{limit: 64},message:"must NOT have more than 64 items"};
if(vErrors === null){
vErrors = [err20];
}
else {
vErrors.push(err20);
}
errors++;
}
const len3 = data9.length;
for(let i3=0; i3<len3; i3++){
let data10 = data9[i3];
if(typeof data10 === "string"){
if(func2(data10) > 4096){
const err21 = {instancePath:instancePath+"/upstream/ca/" + i3,schemaPath:"#/properties/upstream/properties/ca/items/maxLength",keyword:"maxLength",params:{limit: 4096},message:"must NOT have more than 4096 characters"};
if(vErrors === null){
vErrors = [err21];
}
else {
vErrors.push(err21);
}
errors++;
}
if(!pattern39.test(data10)){
const err22 = {instancePath:instancePath+"/upstream/ca/" + i3,schemaPath:"#/properties/upstream/properties/ca/items/pattern",keyword:"pattern",params:{pattern: "^/"},message:"must match pattern \""+"^/"+"\""};
if(vErrors === null){
vErrors = [err22];
}
else {
vErrors.push(err22);
}
errors++;
}
}
else {
const err23 = {instancePath:instancePath+"/upstream/ca/" + i3,schemaPath:"#/properties/upstream/properties/ca/items/type",keyword:"type",params:{type: "string"},message:"must be string"};
if(vErrors === null){
vErrors = [err23];
}
else {
vErrors.push(err23);
}
errors++;
}
}
}
else {
const err24 = {instancePath:instancePath+"/upstream/ca",schemaPath:"#/properties/upstream/properties/ca/type",keyword:"type",params:{type: "array"},message:"must be array"};
if(vErrors === null){
vErrors = [err24];
}
else {
vErrors.push(err24);
}
errors++;
}
}
}
else {
const err25 = {instancePath:instancePath+"/upstream",schemaPath:"#/properties/upstream/type",keyword:"type",params:{type: "object"},message:"must be object"};
if(vErrors === null){
vErrors = [err25];
}
else {
vErrors.push(err25);
}
errors++;
}
}
}
else {
const err26 = {instancePath,schemaPath:"#/type",keyword:"type",params:{type: "object"},message:"must be object"};
if(vErrors === null){
vErrors = [err26];
}
else {
vErrors.push(err26);
}
errors++;
}
validate47.errors = vErrors;
return errors === 0;
}
validate47.evaluated = {"props":true,"dynamicProps":false,"dynamicItems":false};

const schema83 = {"type":"array","maxItems":1024,"uniqueItems":true,"items":{"$ref":"#/$defs/sandboxPath"}};
const schema84 = {"title":"an absolute path, or one starting with `~/`","type":"string","pattern":"^(/|~/|~$)[^\\u0000]*$"};

function validate49(data, {instancePath="", parentData, parentDataProperty, rootData=data, dynamicAnchors={}}={}){
let vErrors = null;
let errors = 0;
const evaluated0 = validate49.evaluated;
if(evaluated0.dynamicProps){
evaluated0.props = undefined;
}
if(evaluated0.dynamicItems){
evaluated0.items = undefined;
}
if(Array.isArray(data)){
if(data.length > 1024){
const err0 = {instancePath,schemaPath:"#/maxItems",keyword:"maxItems",params:{limit: 1024},message:"must NOT have more than 1024 items"};
if(vErrors === null){
vErrors = [err0];
}
else {
vErrors.push(err0);
}
errors++;
}
const len0 = data.length;
for(let i0=0; i0<len0; i0++){
let data0 = data[i0];
if(typeof data0 === "string"){
if(!pattern14.test(data0)){
const err1 = {instancePath:instancePath+"/" + i0,schemaPath:"#/$defs/sandboxPath/pattern",keyword:"pattern",params:{pattern: "^(/|~/|~$)[^\\u0000]*$"},message:"must match pattern \""+"^(/|~/|~$)[^\\u0000]*$"+"\""};
if(vErrors === null){
vErrors = [err1];
}
else {
vErrors.push(err1);
}
errors++;
}
}
else {
const err2 = {instancePath:instancePath+"/" + i0,schemaPath:"#/$defs/sandboxPath/type",keyword:"type",params:{type: "string"},message:"must be string"};
if(vErrors === null){
vErrors = [err2];
}
else {
vErrors.push(err2);
}
errors++;
}
}
let i1 = data.length;
let j0;
if(i1 > 1){
outer0:
for(;i1--;){
for(j0 = i1; j0--;){
if(func0(data[i1], data[j0])){
const err3 = {instancePath,schemaPath:"#/uniqueItems",keyword:"uniqueItems",params:{i: i1, j: j0},message:"must NOT have duplicate items (items ## "+j0+" and "+i1+" are identical)"};
if(vErrors === null){
vErrors = [err3];
}
else {
vErrors.push(err3);
}
errors++;
break outer0;
}
}
}
}
}
else {
const err4 = {instancePath,schemaPath:"#/type",keyword:"type",params:{type: "array"},message:"must be array"};
if(vErrors === null){
vErrors = [err4];
}
else {
vErrors.push(err4);
}
errors++;
}
validate49.errors = vErrors;
return errors === 0;
}
validate49.evaluated = {"items":true,"dynamicProps":false,"dynamicItems":false};


function validate46(data, {instancePath="", parentData, parentDataProperty, rootData=data, dynamicAnchors={}}={}){
let vErrors = null;
let errors = 0;
const evaluated0 = validate46.evaluated;
if(evaluated0.dynamicProps){
evaluated0.props = undefined;
}
if(evaluated0.dynamicItems){
evaluated0.items = undefined;
}
if(data && typeof data == "object" && !Array.isArray(data)){
for(const key0 in data){
if(!((((key0 === "mode") || (key0 === "helper")) || (key0 === "network")) || (key0 === "filesystem"))){
const err0 = {instancePath,schemaPath:"#/additionalProperties",keyword:"additionalProperties",params:{additionalProperty: key0},message:"must NOT have additional properties"};
if(vErrors === null){
vErrors = [err0];
}
else {
vErrors.push(err0);
}
errors++;
}
}
if(data.mode !== undefined){
let data0 = data.mode;
if(!(((data0 === "required") || (data0 === "auto")) || (data0 === "off"))){
const err1 = {instancePath:instancePath+"/mode",schemaPath:"#/properties/mode/enum",keyword:"enum",params:{allowedValues: schema79.properties.mode.enum},message:"must be equal to one of the allowed values"};
if(vErrors === null){
vErrors = [err1];
}
else {
vErrors.push(err1);
}
errors++;
}
}
if(data.helper !== undefined){
let data1 = data.helper;
if(typeof data1 === "string"){
if(!pattern38.test(data1)){
const err2 = {instancePath:instancePath+"/helper",schemaPath:"#/properties/helper/pattern",keyword:"pattern",params:{pattern: "^/[^\\u0000]*$"},message:"must match pattern \""+"^/[^\\u0000]*$"+"\""};
if(vErrors === null){
vErrors = [err2];
}
else {
vErrors.push(err2);
}
errors++;
}
}
else {
const err3 = {instancePath:instancePath+"/helper",schemaPath:"#/properties/helper/type",keyword:"type",params:{type: "string"},message:"must be string"};
if(vErrors === null){
vErrors = [err3];
}
else {
vErrors.push(err3);
}
errors++;
}
}
if(data.network !== undefined){
let data2 = data.network;
const _errs6 = errors;
let valid1 = false;
const _errs7 = errors;
if(!((data2 === "none") || (data2 === "open"))){
const err4 = {instancePath:instancePath+"/network",schemaPath:"#/properties/network/anyOf/0/enum",keyword:"enum",params:{allowedValues: schema79.properties.network.anyOf[0].enum},message:"must be equal to one of the allowed values"};
if(vErrors === null){
vErrors = [err4];
}
else {
vErrors.push(err4);
}
errors++;
}
var _valid0 = _errs7 === errors;
valid1 = valid1 || _valid0;
const _errs8 = errors;
if(!(validate47(data2, {instancePath:instancePath+"/network",parentData:data,parentDataProperty:"network",rootData,dynamicAnchors}))){
vErrors = vErrors === null ? validate47.errors : vErrors.concat(validate47.errors);
errors = vErrors.length;
}
var _valid0 = _errs8 === errors;
valid1 = valid1 || _valid0;
if(!valid1){
const err5 = {instancePath:instancePath+"/network",schemaPath:"#/properties/network/anyOf",keyword:"anyOf",params:{},message:"must match a schema in anyOf"};
if(vErrors === null){
vErrors = [err5];
}
else {
vErrors.push(err5);
}
errors++;
}
else {
errors = _errs6;
if(vErrors !== null){
if(_errs6){
vErrors.length = _errs6;
}
else {
vErrors = null;
}
}
}
}
if(data.filesystem !== undefined){
let data3 = data.filesystem;
if(data3 && typeof data3 == "object" && !Array.isArray(data3)){
for(const key1 in data3){
if(!(((key1 === "hidden") || (key1 === "writable")) || (key1 === "readOnly"))){
const err6 = {instancePath:instancePath+"/filesystem",schemaPath:"#/properties/filesystem/additionalProperties",keyword:"additionalProperties",params:{additionalProperty: key1},message:"must NOT have additional properties"};
if(vErrors === null){
vErrors = [err6];
}
else {
vErrors.push(err6);
}
errors++;
}
}
if(data3.hidden !== undefined){
if(!(validate49(data3.hidden, {instancePath:instancePath+"/filesystem/hidden",parentData:data3,parentDataProperty:"hidden",rootData,dynamicAnchors}))){
vErrors = vErrors === null ? validate49.errors : vErrors.concat(validate49.errors);
errors = vErrors.length;
}
}
if(data3.writable !== undefined){
if(!(validate49(data3.writable, {instancePath:instancePath+"/filesystem/writable",parentData:data3,parentDataProperty:"writable",rootData,dynamicAnchors}))){
vErrors = vErrors === null ? validate49.errors : vErrors.concat(validate49.errors);
errors = vErrors.length;
}
}
if(data3.readOnly !== undefined){
if(!(validate49(data3.readOnly, {instancePath:instancePath+"/filesystem/readOnly",parentData:data3,parentDataProperty:"readOnly",rootData,dynamicAnchors}))){
vErrors = vErrors === null ? validate49.errors : vErrors.concat(validate49.errors);
errors = vErrors.length;
}
}
}
else {
const err7 = {instancePath:instancePath+"/filesystem",schemaPath:"#/properties/filesystem/type",keyword:"type",params:{type: "object"},message:"must be object"};
if(vErrors === null){
vErrors = [err7];
}
else {
vErrors.push(err7);
}
errors++;
}
}
}
else {
const err8 = {instancePath,schemaPath:"#/type",keyword:"type",params:{type: "object"},message:"must be object"};
if(vErrors === null){
vErrors = [err8];
}
else {
vErrors.push(err8);
}
errors++;
}
validate46.errors = vErrors;
return errors === 0;
}
validate46.evaluated = {"props":true,"dynamicProps":false,"dynamicItems":false};


function validate20(data, {instancePath="", parentData, parentDataProperty, rootData=data, dynamicAnchors={}}={}){
/*# sourceURL="urn:execgate:policy:1" */;
let vErrors = null;
let errors = 0;
const evaluated0 = validate20.evaluated;
if(evaluated0.dynamicProps){
evaluated0.props = undefined;
}
if(evaluated0.dynamicItems){
evaluated0.items = undefined;
}
if(data && typeof data == "object" && !Array.isArray(data)){
if(data.version === undefined){
const err0 = {instancePath,schemaPath:"#/required",keyword:"required",params:{missingProperty: "version"},message:"must have required property '"+"version"+"'"};
if(vErrors === null){
vErrors = [err0];
}
else {
vErrors.push(err0);
}
errors++;
}
for(const key0 in data){
if(!(func1.call(schema31.properties, key0))){
const err1 = {instancePath,schemaPath:"#/additionalProperties",keyword:"additionalProperties",params:{additionalProperty: key0},message:"must NOT have additional properties"};
if(vErrors === null){
vErrors = [err1];
}
else {
vErrors.push(err1);
}
errors++;
}
}
if(data.$schema !== undefined){
if(typeof data.$schema !== "string"){
const err2 = {instancePath:instancePath+"/$schema",schemaPath:"#/properties/%24schema/type",keyword:"type",params:{type: "string"},message:"must be string"};
if(vErrors === null){
vErrors = [err2];
}
else {
vErrors.push(err2);
}
errors++;
}
}
if(data.version !== undefined){
if(1 !== data.version){
const err3 = {instancePath:instancePath+"/version",schemaPath:"#/properties/version/const",keyword:"const",params:{allowedValue: 1},message:"must be equal to constant"};
if(vErrors === null){
vErrors = [err3];
}
else {
vErrors.push(err3);
}
errors++;
}
}
if(data.extends !== undefined){
let data2 = data.extends;
const _errs6 = errors;
let valid1 = false;
const _errs7 = errors;
if(typeof data2 === "string"){
if(func2(data2) > 4096){
const err4 = {instancePath:instancePath+"/extends",schemaPath:"#/$defs/extendsTarget/maxLength",keyword:"maxLength",params:{limit: 4096},message:"must NOT have more than 4096 characters"};
if(vErrors === null){
vErrors = [err4];
}
else {
vErrors.push(err4);
}
errors++;
}
if(func2(data2) < 1){
const err5 = {instancePath:instancePath+"/extends",schemaPath:"#/$defs/extendsTarget/minLength",keyword:"minLength",params:{limit: 1},message:"must NOT have fewer than 1 characters"};
if(vErrors === null){
vErrors = [err5];
}
else {
vErrors.push(err5);
}
errors++;
}
if(!pattern4.test(data2)){
const err6 = {instancePath:instancePath+"/extends",schemaPath:"#/$defs/extendsTarget/pattern",keyword:"pattern",params:{pattern: "^[^\\u0000]+$"},message:"must match pattern \""+"^[^\\u0000]+$"+"\""};
if(vErrors === null){
vErrors = [err6];
}
else {
vErrors.push(err6);
}
errors++;
}
}
else {
const err7 = {instancePath:instancePath+"/extends",schemaPath:"#/$defs/extendsTarget/type",keyword:"type",params:{type: "string"},message:"must be string"};
if(vErrors === null){
vErrors = [err7];
}
else {
vErrors.push(err7);
}
errors++;
}
var _valid0 = _errs7 === errors;
valid1 = valid1 || _valid0;
const _errs10 = errors;
if(Array.isArray(data2)){
if(data2.length > 16){
const err8 = {instancePath:instancePath+"/extends",schemaPath:"#/properties/extends/anyOf/1/maxItems",keyword:"maxItems",params:{limit: 16},message:"must NOT have more than 16 items"};
if(vErrors === null){
vErrors = [err8];
}
else {
vErrors.push(err8);
}
errors++;
}
if(data2.length < 1){
const err9 = {instancePath:instancePath+"/extends",schemaPath:"#/properties/extends/anyOf/1/minItems",keyword:"minItems",params:{limit: 1},message:"must NOT have fewer than 1 items"};
if(vErrors === null){
vErrors = [err9];
}
else {
vErrors.push(err9);
}
errors++;
}
const len0 = data2.length;
for(let i0=0; i0<len0; i0++){
let data3 = data2[i0];
if(typeof data3 === "string"){
if(func2(data3) > 4096){
const err10 = {instancePath:instancePath+"/extends/" + i0,schemaPath:"#/$defs/extendsTarget/maxLength",keyword:"maxLength",params:{limit: 4096},message:"must NOT have more than 4096 characters"};
if(vErrors === null){
vErrors = [err10];
}
else {
vErrors.push(err10);
}
errors++;
}
if(func2(data3) < 1){
const err11 = {instancePath:instancePath+"/extends/" + i0,schemaPath:"#/$defs/extendsTarget/minLength",keyword:"minLength",params:{limit: 1},message:"must NOT have fewer than 1 characters"};
if(vErrors === null){
vErrors = [err11];
}
else {
vErrors.push(err11);
}
errors++;
}
if(!pattern4.test(data3)){
const err12 = {instancePath:instancePath+"/extends/" + i0,schemaPath:"#/$defs/extendsTarget/pattern",keyword:"pattern",params:{pattern: "^[^\\u0000]+$"},message:"must match pattern \""+"^[^\\u0000]+$"+"\""};
if(vErrors === null){
vErrors = [err12];
}
else {
vErrors.push(err12);
}
errors++;
}
}
else {
const err13 = {instancePath:instancePath+"/extends/" + i0,schemaPath:"#/$defs/extendsTarget/type",keyword:"type",params:{type: "string"},message:"must be string"};
if(vErrors === null){
vErrors = [err13];
}
else {
vErrors.push(err13);
}
errors++;
}
}
}
else {
const err14 = {instancePath:instancePath+"/extends",schemaPath:"#/properties/extends/anyOf/1/type",keyword:"type",params:{type: "array"},message:"must be array"};
if(vErrors === null){
vErrors = [err14];
}
else {
vErrors.push(err14);
}
errors++;
}
var _valid0 = _errs10 === errors;
valid1 = valid1 || _valid0;
if(!valid1){
const err15 = {instancePath:instancePath+"/extends",schemaPath:"#/properties/extends/anyOf",keyword:"anyOf",params:{},message:"must match a schema in anyOf"};
if(vErrors === null){
vErrors = [err15];
}
else {
vErrors.push(err15);
}
errors++;
}
else {
errors = _errs6;
if(vErrors !== null){
if(_errs6){
vErrors.length = _errs6;
}
else {
vErrors = null;
}
}
}
}
if(data.exec !== undefined){
if(!(validate21(data.exec, {instancePath:instancePath+"/exec",parentData:data,parentDataProperty:"exec",rootData,dynamicAnchors}))){
vErrors = vErrors === null ? validate21.errors : vErrors.concat(validate21.errors);
errors = vErrors.length;
}
}
if(data.cwd !== undefined){
let data5 = data.cwd;
if(data5 && typeof data5 == "object" && !Array.isArray(data5)){
for(const key1 in data5){
if(!(key1 === "roots")){
const err16 = {instancePath:instancePath+"/cwd",schemaPath:"#/$defs/cwd/additionalProperties",keyword:"additionalProperties",params:{additionalProperty: key1},message:"must NOT have additional properties"};
if(vErrors === null){
vErrors = [err16];
}
else {
vErrors.push(err16);
}
errors++;
}
}
if(data5.roots !== undefined){
let data6 = data5.roots;
if(Array.isArray(data6)){
if(data6.length > 256){
const err17 = {instancePath:instancePath+"/cwd/roots",schemaPath:"#/$defs/cwd/properties/roots/maxItems",keyword:"maxItems",params:{limit: 256},message:"must NOT have more than 256 items"};
if(vErrors === null){
vErrors = [err17];
}
else {
vErrors.push(err17);
}
errors++;
}
const len1 = data6.length;
for(let i1=0; i1<len1; i1++){
let data7 = data6[i1];
if(typeof data7 === "string"){
if(!pattern14.test(data7)){
const err18 = {instancePath:instancePath+"/cwd/roots/" + i1,schemaPath:"#/$defs/cwd/properties/roots/items/pattern",keyword:"pattern",params:{pattern: "^(/|~/|~$)[^\\u0000]*$"},message:"must match pattern \""+"^(/|~/|~$)[^\\u0000]*$"+"\""};
if(vErrors === null){
vErrors = [err18];
}
else {
vErrors.push(err18);
}
errors++;
}
}
else {
const err19 = {instancePath:instancePath+"/cwd/roots/" + i1,schemaPath:"#/$defs/cwd/properties/roots/items/type",keyword:"type",params:{type: "string"},message:"must be string"};
if(vErrors === null){
vErrors = [err19];
}
else {
vErrors.push(err19);
}
errors++;
}
}
let i2 = data6.length;
let j0;
if(i2 > 1){
const indices0 = {};
for(;i2--;){
let item0 = data6[i2];
if(typeof item0 !== "string"){
continue;
}
if(typeof indices0[item0] == "number"){
j0 = indices0[item0];
const err20 = {instancePath:instancePath+"/cwd/roots",schemaPath:"#/$defs/cwd/properties/roots/uniqueItems",keyword:"uniqueItems",params:{i: i2, j: j0},message:"must NOT have duplicate items (items ## "+j0+" and "+i2+" are identical)"};
if(vErrors === null){
vErrors = [err20];
}
else {
vErrors.push(err20);
}
errors++;
break;
}
indices0[item0] = i2;
}
}
}
else {
const err21 = {instancePath:instancePath+"/cwd/roots",schemaPath:"#/$defs/cwd/properties/roots/type",keyword:"type",params:{type: "array"},message:"must be array"};
if(vErrors === null){
vErrors = [err21];
}
else {
vErrors.push(err21);
}
errors++;
}
}
}
else {
const err22 = {instancePath:instancePath+"/cwd",schemaPath:"#/$defs/cwd/type",keyword:"type",params:{type: "object"},message:"must be object"};
if(vErrors === null){
vErrors = [err22];
}
else {
vErrors.push(err22);
}
errors++;
}
}
if(data.env !== undefined){
if(!(validate27(data.env, {instancePath:instancePath+"/env",parentData:data,parentDataProperty:"env",rootData,dynamicAnchors}))){
vErrors = vErrors === null ? validate27.errors : vErrors.concat(validate27.errors);
errors = vErrors.length;
}
}
if(data.rules !== undefined){
if(!(validate34(data.rules, {instancePath:instancePath+"/rules",parentData:data,parentDataProperty:"rules",rootData,dynamicAnchors}))){
vErrors = vErrors === null ? validate34.errors : vErrors.concat(validate34.errors);
errors = vErrors.length;
}
}
if(data.secrets !== undefined){
if(!(validate38(data.secrets, {instancePath:instancePath+"/secrets",parentData:data,parentDataProperty:"secrets",rootData,dynamicAnchors}))){
vErrors = vErrors === null ? validate38.errors : vErrors.concat(validate38.errors);
errors = vErrors.length;
}
}
if(data.audit !== undefined){
if(!(validate44(data.audit, {instancePath:instancePath+"/audit",parentData:data,parentDataProperty:"audit",rootData,dynamicAnchors}))){
vErrors = vErrors === null ? validate44.errors : vErrors.concat(validate44.errors);
errors = vErrors.length;
}
}
if(data.sandbox !== undefined){
if(!(validate46(data.sandbox, {instancePath:instancePath+"/sandbox",parentData:data,parentDataProperty:"sandbox",rootData,dynamicAnchors}))){
vErrors = vErrors === null ? validate46.errors : vErrors.concat(validate46.errors);
errors = vErrors.length;
}
}
}
else {
const err23 = {instancePath,schemaPath:"#/type",keyword:"type",params:{type: "object"},message:"must be object"};
if(vErrors === null){
vErrors = [err23];
}
else {
vErrors.push(err23);
}
errors++;
}
validate20.errors = vErrors;
return errors === 0;
}
validate20.evaluated = {"props":true,"dynamicProps":false,"dynamicItems":false};
