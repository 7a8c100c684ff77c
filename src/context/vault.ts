// The Platform's own secrets (its CA, trust keys, listener certificate and
// key, federation signing key) behind one small interface. Names are relative
// paths such as `trust/<kid>.json` or `tls/key.pem`; values are text.
//
// They live in the store, each sealed with AES-256-GCM under a key derived
// from platform/master.key (docs/storage-ha.md), so every Platform on one PostgreSQL
// presents the same pin and signs with the same keys, and a copy of the
// database alone reveals none of them. master.key itself stays a file.
// FieldSeal seals single columns of other tables (project env) with the same key.
import { readdirSync, statSync, unlinkSync } from 'node:fs'
import type { DataDir } from '../datadir.ts'
import { b64url, deriveKey, fromB64url } from '../crypto/tokens.ts'
import { sealBytes, unsealBytes } from '../crypto/seal.ts'
import { MusterError } from '../errors.ts'
import { log } from '../log.ts'
import type { Db, Store } from '../store/db.ts'
import { deleteSecret, getSecret, insertSecret, listSecretNames, upsertSecret } from '../store/secrets.ts'

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
const PURPOSE = 'muster store secrets v1'
/** A known value sealed on first use: proves the master key opens this store's secrets. */
const CHECK = 'check/master-key'

/** What each sealed value is bound to: the purpose and its own name, so a copy onto another row does not open. */
const sealedAs = (name: string) => `${PURPOSE}:${name}`

function checkName(name: string): string {
  if (!NAME.test(name) || name.includes('..')) throw new Error(`vault: invalid secret name ${JSON.stringify(name)}`)
  return name
}

export class StoreVault implements Vault {
  private readonly key: Uint8Array

  constructor(
    private readonly db: Db,
    masterKey: Uint8Array,
    private readonly now: () => number = Date.now,
  ) {
    this.key = deriveKey(masterKey, PURPOSE)
  }

  private seal(name: string, value: string): Uint8Array {
    return sealBytes(this.key, sealedAs(name), value)
  }

  private open(name: string, sealed: Uint8Array): string | null {
    return unsealBytes(this.key, sealedAs(name), sealed)?.toString('utf8') ?? null
  }

  async get(name: string): Promise<string | null> {
    const row = await getSecret(this.db, checkName(name))
    if (!row) return null
    const value = this.open(name, row.sealed)
    if (value === null) throw sealedError()
    return value
  }

  async put(name: string, value: string): Promise<void> {
    await upsertSecret(this.db, checkName(name), this.seal(name, value), this.now())
  }

  async create(name: string, value: string): Promise<boolean> {
    return insertSecret(this.db, checkName(name), this.seal(name, value), this.now())
  }

  async delete(name: string): Promise<void> {
    await deleteSecret(this.db, checkName(name))
  }

  async list(prefix: string): Promise<string[]> {
    return listSecretNames(this.db, prefix.replace(/\/?$/, '/'))
  }

  /** Refuses to start when this master key cannot open what the store holds (another Platform's key). */
  async verifyKey(): Promise<void> {
    await this.create(CHECK, 'muster')
    const row = await getSecret(this.db, CHECK)
    if (!row || this.open(CHECK, row.sealed) !== 'muster') throw sealedError()
  }
}

function sealedError(): MusterError {
  return new MusterError(
    'store-sealed',
    'This Platform\'s platform/master.key cannot open the secrets in its store: every Platform sharing a store needs the same master key. ' +
      'Copy platform/master.key (mode 0600) from a Platform that already uses this store into this data directory, then start again.',
  )
}

/** Sealed columns start with this; anything else was written unsealed (by an earlier version). */
export const SEALED_FIELD = 'sealed1:'

/**
 * Columns of ordinary tables that hold secrets (project env, the assignments that
 * carry it): text sealed with the vault key, the associated data naming the
 * table, the row and the column, so a value cannot be moved to another row or
 * column and opened there (docs/security.md).
 */
export class FieldSeal {
  private readonly key: Uint8Array

  constructor(masterKey: Uint8Array) {
    this.key = deriveKey(masterKey, PURPOSE)
  }

  private aad(table: string, row: string, column: string): string {
    return `${PURPOSE}:field\n${table}\n${row}\n${column}`
  }

  seal(table: string, row: string, column: string, text: string): string {
    return SEALED_FIELD + b64url(sealBytes(this.key, this.aad(table, row, column), text))
  }

  /** The text of a sealed column; an unsealed one (an earlier version's) as it is. A value that does not open here is refused. */
  open(table: string, row: string, column: string, stored: string): string {
    if (!stored.startsWith(SEALED_FIELD)) return stored
    const text = unsealBytes(this.key, this.aad(table, row, column), fromB64url(stored.slice(SEALED_FIELD.length)))
    if (text === null) {
      throw new MusterError('store-sealed', `The store's ${table}.${column} of ${row} does not open with this Platform's platform/master.key: it was sealed by another key or moved from another row. Restore the store (or that row) from backup, or start with the master key that sealed it.`)
    }
    return text.toString('utf8')
  }
}

/** Secret files of earlier versions, moved into the store on first start. */
const LEGACY_DIRS = ['trust', 'tls', 'ca', 'ca-next', 'ca-previous', 'api']
const LEGACY_BINARY = ['cluster-signing-key']

/** Moves secret files of an existing data directory into the store (sealed), then removes the files. */
async function migrateFiles(vault: StoreVault, dataDir: DataDir): Promise<void> {
  const moved: string[] = []
  const take = async (name: string, value: string, file: string) => {
    await vault.create(name, value)
    unlinkSync(file)
    moved.push(name)
  }
  for (const dir of LEGACY_DIRS) {
    if (!dataDir.exists('platform', dir)) continue
    for (const f of readdirSync(dataDir.path('platform', dir))) {
      const file = dataDir.path('platform', dir, f)
      if (f.includes('.tmp-') || !statSync(file).isFile() || !NAME.test(f)) continue
      await take(`${dir}/${f}`, dataDir.readSecretText(`platform/${dir}/${f}`) ?? '', file)
    }
  }
  for (const name of LEGACY_BINARY) {
    const raw = dataDir.readSecret(`platform/${name}`)
    if (raw) await take(name, b64url(raw), dataDir.path('platform', name))
  }
  if (moved.length > 0) log.info(`moved ${moved.length} secret file(s) into the store, sealed under platform/master.key: ${moved.join(', ')}`)
}

/** The vault of a Platform: checks the master key against the store, then takes over older secret files. */
export async function openVault(store: Store, dataDir: DataDir, masterKey: Uint8Array): Promise<Vault> {
  const vault = new StoreVault(store, masterKey)
  await vault.verifyKey()
  await migrateFiles(vault, dataDir)
  return vault
}
