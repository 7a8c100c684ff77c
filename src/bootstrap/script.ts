// The bootstrap script a new machine runs (docs/operations.md; src/bootstrap/bootstrap.sh),
// served by the Platform at GET /bootstrap/bootstrap.sh over a connection the
// machine verified with the Platform CA (the bootstrap line checks the CA's
// SHA-256 first). It carries what it checks everything else against: the CA
// certificate, the SHA-256 of the binary and of install.sh, the URL and pin.
import template from './bootstrap.sh' with { type: 'text' }
import { MusterError } from '../errors.ts'

export interface BootstrapValues {
  /** https://HOST:PORT the machine downloads from and joins through. */
  url: string
  /** The pin `worker join` authenticates the Platform with. */
  pin: string
  /** The Platform CA certificate (PEM): curl's only trust anchor. */
  caPem: string
  binarySha256: string
  installSha256: string
  /** `uname -m` of the machines this binary runs on. */
  arch: string
}

/** `uname -m` for the running binary's architecture. */
export function unameArch(arch: string = process.arch): string {
  return arch === 'x64' ? 'x86_64' : arch === 'arm64' ? 'aarch64' : arch
}

// Each value lands inside single quotes or a quoted heredoc: its shape is checked so it can never end them.
const SHAPES: Record<keyof BootstrapValues, RegExp> = {
  url: /^https:\/\/[A-Za-z0-9.:[\]-]+$/,
  pin: /^sha256:[0-9a-f]{64}$/,
  caPem: /^-----BEGIN CERTIFICATE-----\n[A-Za-z0-9+/=\n]+-----END CERTIFICATE-----$/,
  binarySha256: /^[0-9a-f]{64}$/,
  installSha256: /^[0-9a-f]{64}$/,
  arch: /^[a-z0-9_]+$/,
}

export function bootstrapScript(values: BootstrapValues): string {
  const v = { ...values, caPem: values.caPem.trim() }
  for (const [key, shape] of Object.entries(SHAPES)) {
    if (!shape.test(v[key as keyof BootstrapValues])) throw new MusterError('internal', `Cannot write the bootstrap script: unexpected ${key}.`)
  }
  return template
    .replaceAll('@@URL@@', v.url)
    .replace('@@PIN@@', v.pin)
    .replace('@@BIN_SHA256@@', v.binarySha256)
    .replace('@@INSTALL_SHA256@@', v.installSha256)
    .replace('@@ARCH@@', v.arch)
    .replace('@@CA_PEM@@', v.caPem)
}
