/*
 * The per-gateway certificate authority that lets the proxy terminate TLS for hosts an injected
 * secret is bound to. Created in memory when the gateway first needs it, never written with its
 * key: only the certificate leaves this module (in the bundle the sandbox trusts).
 *
 * Library choice: node-forge builds the X.509 structures (well kept, no dependencies, used by
 * most Node MITM proxies); the keys and signatures come from Node's native crypto. Measured here:
 * forge's pure-JS RSA signing took ~60 ms per leaf and its key generation ~120 ms, against ~1 ms
 * per leaf with native signing. @peculiar/x509 (WebCrypto, ECDSA) was tried first: it needs a
 * process-wide `reflect-metadata` polyfill (tsyringe), which a library must not impose on its host.
 * One RSA key serves every leaf of a gateway; leaves are cached per host name.
 *
 * The two keys are generated on libuv's thread pool (createEgressCaAsync: each RSA-2048 key is
 * some 50 to 150 ms of CPU, which the synchronous call spent on the event loop, stalling every
 * other run's output and the proxy's other connections), and node-forge (865 KiB of JavaScript) is
 * loaded only when a CA is made: a gateway whose runs never intercept never loads it.
 */
import { generateKeyPair, generateKeyPairSync, randomBytes, sign, type KeyObject } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { createSecureContext, rootCertificates, type SecureContext } from 'node:tls';
import type * as Forge from 'node-forge';
import { ExecgateError } from '../errors';

let forgeModule: typeof Forge | undefined;
/** node-forge, loaded on first use. */
function getForge(): typeof Forge {
  forgeModule ??= require('node-forge') as typeof Forge;
  return forgeModule;
}

interface KeyPair {
  readonly publicKey: KeyObject;
  readonly privateKey: KeyObject;
}

const SYSTEM_BUNDLES = ['/etc/ssl/certs/ca-certificates.crt', '/etc/pki/tls/certs/ca-bundle.crt', '/etc/ssl/cert.pem'];
const LEAF_DAYS = 7;

export interface EgressCa {
  /** The CA certificate (PEM). */
  readonly certPem: string;
  /** System CAs followed by this CA: what the sandbox's TLS clients are told to trust. */
  getTrustBundle(): string;
  /** A TLS server context presenting a certificate for `host`, signed by this CA. */
  getSecureContext(host: string): SecureContext;
}

export interface EgressCaOptions {
  readonly systemBundle?: string;
  readonly keyBits?: number;
}

/** A new CA, its keys generated on this thread (tests, tools): prefer createEgressCaAsync. */
export function createEgressCa(options: EgressCaOptions = {}): EgressCa {
  try {
    const bits = options.keyBits ?? 2048;
    return new ForgeCa(options, generateKeyPairSync('rsa', { modulusLength: bits }), generateKeyPairSync('rsa', { modulusLength: bits }));
  } catch (error) {
    throw caFailed(error);
  }
}

/** A new CA, its two keys generated at once on the thread pool: the event loop goes on meanwhile. */
export async function createEgressCaAsync(options: EgressCaOptions = {}): Promise<EgressCa> {
  const bits = options.keyBits ?? 2048;
  const generate = (): Promise<KeyPair> => new Promise((resolve, reject) => {
    generateKeyPair('rsa', { modulusLength: bits }, (error, publicKey, privateKey) => (error ? reject(error) : resolve({ publicKey, privateKey })));
  });
  try {
    const [ca, leaf] = await Promise.all([generate(), generate()]);
    return new ForgeCa(options, ca, leaf);
  } catch (error) {
    throw caFailed(error);
  }
}

function caFailed(error: unknown): ExecgateError {
  return new ExecgateError('EXECGATE_ERR_EGRESS_CA_FAILED', `Could not create the egress certificate authority: ${(error as Error).message}.`, {}, { cause: error });
}

class ForgeCa implements EgressCa {
  readonly certPem: string;
  readonly #caKey: KeyObject;
  readonly #leafKeyPem: string;
  readonly #leafPublic: Forge.pki.PublicKey;
  readonly #issuer: Forge.pki.CertificateField[];
  readonly #contexts = new Map<string, SecureContext>();
  readonly #systemBundle: string | undefined;

  constructor(options: EgressCaOptions, ca: KeyPair, leaf: KeyPair) {
    const forge = getForge();
    this.#caKey = ca.privateKey;
    this.#leafKeyPem = leaf.privateKey.export({ type: 'pkcs8', format: 'pem' }) as string;
    this.#leafPublic = forge.pki.publicKeyFromPem(leaf.publicKey.export({ type: 'spki', format: 'pem' }) as string);
    const cert = forge.pki.createCertificate();
    cert.publicKey = forge.pki.publicKeyFromPem(ca.publicKey.export({ type: 'spki', format: 'pem' }) as string);
    setValidity(cert, 365);
    this.#issuer = [
      { name: 'commonName', value: `execgate egress CA ${randomBytes(4).toString('hex')}` },
      { name: 'organizationName', value: 'execgate (per-gateway, ephemeral)' },
    ];
    cert.setSubject(this.#issuer);
    cert.setIssuer(this.#issuer);
    cert.setExtensions([
      { name: 'basicConstraints', cA: true, pathLenConstraint: 0, critical: true },
      { name: 'keyUsage', keyCertSign: true, cRLSign: true, critical: true },
      { name: 'subjectKeyIdentifier' },
    ]);
    signNative(cert, this.#caKey);
    this.certPem = forge.pki.certificateToPem(cert);
    this.#systemBundle = options.systemBundle;
  }

  getTrustBundle(): string {
    const path = this.#systemBundle ?? SYSTEM_BUNDLES.find((candidate) => existsSync(candidate));
    let system: string;
    try {
      system = path ? readFileSync(path, 'utf8') : rootCertificates.join('\n');
    } catch (error) {
      throw new ExecgateError('EXECGATE_ERR_EGRESS_CA_FAILED', `Could not read the system CA bundle ${path}: ${(error as Error).message}.`, { path }, { cause: error });
    }
    return `${system.trimEnd()}\n${this.certPem}`;
  }

  getSecureContext(host: string): SecureContext {
    let context = this.#contexts.get(host);
    if (!context) {
      const forge = getForge();
      const cert = forge.pki.createCertificate();
      cert.publicKey = this.#leafPublic;
      setValidity(cert, LEAF_DAYS);
      cert.setSubject([{ name: 'commonName', value: host.slice(0, 64) }]);
      cert.setIssuer(this.#issuer);
      const ip = /^[0-9.]+$|:/.test(host);
      cert.setExtensions([
        { name: 'basicConstraints', cA: false },
        { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
        { name: 'extKeyUsage', serverAuth: true },
        { name: 'subjectAltName', altNames: [ip ? { type: 7, ip: host } : { type: 2, value: host }] },
      ]);
      signNative(cert, this.#caKey);
      context = createSecureContext({ key: this.#leafKeyPem, cert: forge.pki.certificateToPem(cert) });
      this.#contexts.set(host, context);
    }
    return context;
  }
}

function setValidity(cert: Forge.pki.Certificate, days: number): void {
  cert.serialNumber = `01${randomBytes(15).toString('hex')}`;
  // Back-dated an hour: a sandbox clock a little behind the gateway's must not reject it.
  cert.validity.notBefore = new Date(Date.now() - 3600_000);
  cert.validity.notAfter = new Date(Date.now() + days * 86400_000);
}

// forge's own RSA signing is pure JS (~60 ms); Node signs the same TBS bytes in ~1 ms.
function signNative(cert: Forge.pki.Certificate, key: KeyObject): void {
  const forge = getForge();
  const oid = forge.pki.oids.sha256WithRSAEncryption;
  cert.signatureOid = oid;
  (cert as unknown as { siginfo: { algorithmOid: string } }).siginfo.algorithmOid = oid;
  const getTbs = (c: Forge.pki.Certificate): Forge.asn1.Asn1 => (forge.pki as unknown as { getTBSCertificate(c: Forge.pki.Certificate): Forge.asn1.Asn1 }).getTBSCertificate(c);
  const tbs = forge.asn1.toDer(getTbs(cert)).getBytes();
  cert.signature = sign('sha256', Buffer.from(tbs, 'binary'), key).toString('binary');
}
