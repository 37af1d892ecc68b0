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
 */
import { generateKeyPairSync, randomBytes, sign, type KeyObject } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { createSecureContext, rootCertificates, type SecureContext } from 'node:tls';
import forge from 'node-forge';
import { ExecgateError } from '../errors';

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

export function createEgressCa(options: { systemBundle?: string; keyBits?: number } = {}): EgressCa {
  try {
    return new ForgeCa(options);
  } catch (error) {
    throw new ExecgateError('EXECGATE_ERR_EGRESS_CA_FAILED', `Could not create the egress certificate authority: ${(error as Error).message}.`, {}, { cause: error });
  }
}

class ForgeCa implements EgressCa {
  readonly certPem: string;
  readonly #caKey: KeyObject;
  readonly #leafKeyPem: string;
  readonly #leafPublic: forge.pki.PublicKey;
  readonly #issuer: forge.pki.CertificateField[];
  readonly #contexts = new Map<string, SecureContext>();
  readonly #systemBundle: string | undefined;

  constructor(options: { systemBundle?: string; keyBits?: number }) {
    const bits = options.keyBits ?? 2048;
    const ca = generateKeyPairSync('rsa', { modulusLength: bits });
    const leaf = generateKeyPairSync('rsa', { modulusLength: bits });
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

function setValidity(cert: forge.pki.Certificate, days: number): void {
  cert.serialNumber = `01${randomBytes(15).toString('hex')}`;
  // Back-dated an hour: a sandbox clock a little behind the gateway's must not reject it.
  cert.validity.notBefore = new Date(Date.now() - 3600_000);
  cert.validity.notAfter = new Date(Date.now() + days * 86400_000);
}

// forge's own RSA signing is pure JS (~60 ms); Node signs the same TBS bytes in ~1 ms.
function signNative(cert: forge.pki.Certificate, key: KeyObject): void {
  const oid = forge.pki.oids.sha256WithRSAEncryption;
  cert.signatureOid = oid;
  (cert as unknown as { siginfo: { algorithmOid: string } }).siginfo.algorithmOid = oid;
  const getTbs = (c: forge.pki.Certificate): forge.asn1.Asn1 => (forge.pki as unknown as { getTBSCertificate(c: forge.pki.Certificate): forge.asn1.Asn1 }).getTBSCertificate(c);
  const tbs = forge.asn1.toDer(getTbs(cert)).getBytes();
  cert.signature = sign('sha256', Buffer.from(tbs, 'binary'), key).toString('binary');
}
