// The Platform's own secrets (its CA, trust keys, listener certificate and
// key, federation signing key) behind one small interface, so that where they
// are kept can change without their owners knowing. Names are relative paths
// such as `trust/<kid>.json` or `tls/key.pem`; values are text.
//
// FileVault keeps each secret as a 0600 file under platform/ (the layout of
// SPEC §3). The store-backed vault (sealed rows) replaces it; both answer the
// same calls.
import { readdirSync, unlinkSync } from 'node:fs'
import type { DataDir } from './datadir.ts'

export interface Vault {
  /** The secret stored under `name`, or null. */
  get(name: string): Promise<string | null>
  /** Stores (or replaces) a secret atomically. */
  put(name: string, value: string): Promise<void>
  /** Stores a secret only when none is stored under `name`; false when one was (another Platform won). */
  create(name: string, value: string): Promise<boolean>
  delete(name: string): Promise<void>
  /** Names under a prefix such as `trust/`, sorted. */
  list(prefix: string): Promise<string[]>
}

const NAME = /^[a-z0-9][a-z0-9._-]*(\/[a-z0-9][a-z0-9._-]*)*$/

function checkName(name: string): string {
  if (!NAME.test(name) || name.includes('..')) throw new Error(`vault: invalid secret name ${JSON.stringify(name)}`)
  return name
}

export class FileVault implements Vault {
  constructor(private readonly dataDir: DataDir) {}

  private rel(name: string): string {
    return `platform/${checkName(name)}`
  }

  async get(name: string): Promise<string | null> {
    return this.dataDir.readSecretText(this.rel(name)) ?? null
  }

  async put(name: string, value: string): Promise<void> {
    this.dataDir.writeSecret(this.rel(name), value)
  }

  async create(name: string, value: string): Promise<boolean> {
    return this.dataDir.createSecretExclusive(this.rel(name), value)
  }

  async delete(name: string): Promise<void> {
    try {
      unlinkSync(this.dataDir.path(this.rel(name)))
    } catch {}
  }

  async list(prefix: string): Promise<string[]> {
    const dir = prefix.replace(/\/?$/, '')
    if (!this.dataDir.exists(`platform/${dir}`)) return []
    return readdirSync(this.dataDir.path(`platform/${dir}`))
      .filter((f) => !f.includes('.tmp-'))
      .map((f) => `${dir}/${f}`)
      .sort()
  }
}
