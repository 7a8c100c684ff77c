// The install receipt install.sh writes at /etc/muster/receipt.json (docs/operations.md),
// read by doctor: which role was installed, by which account, and each
// installed file with its SHA-256.
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { sha256Hex } from '../crypto/tokens.ts'

export const RECEIPT_PATH = '/etc/muster/receipt.json'

export interface Receipt {
  role: 'platform' | 'worker'
  version: string
  installedAt: string
  account: string
  uid?: number
  dataDir: string
  units: string[]
  files: { path: string; sha256: string }[]
}

export type ReceiptRead = { state: 'absent'; path: string } | { state: 'invalid'; path: string; reason: string } | { state: 'ok'; path: string; receipt: Receipt }

/** Reads ROOT/etc/muster/receipt.json. */
export function readReceipt(root = '/'): ReceiptRead {
  const path = join(root, RECEIPT_PATH)
  if (!existsSync(path)) return { state: 'absent', path }
  try {
    const r = JSON.parse(readFileSync(path, 'utf8')) as Receipt
    if (r.role !== 'platform' && r.role !== 'worker') return { state: 'invalid', path, reason: 'no role' }
    if (!Array.isArray(r.files)) return { state: 'invalid', path, reason: 'no file list' }
    return { state: 'ok', path, receipt: r }
  } catch (e) {
    return { state: 'invalid', path, reason: (e as Error).message }
  }
}

/** Installed files that are gone or differ from what was installed. */
export function checkReceiptFiles(receipt: Receipt, root = '/'): { missing: string[]; changed: string[] } {
  const missing: string[] = []
  const changed: string[] = []
  for (const f of receipt.files) {
    const p = join(root, f.path)
    if (!existsSync(p)) missing.push(f.path)
    else if (sha256Hex(new Uint8Array(readFileSync(p))) !== f.sha256) changed.push(f.path)
  }
  return { missing, changed }
}
