// Where a created machine downloads muster from: MUSTER_CLOUD_BINARY_URL with
// MUSTER_CLOUD_BINARY_SHA256 (e.g. a release for another architecture), else
// this Platform's own compiled binary, served at GET /api/v1/cloud/binary.
import { MusterError } from '../errors.ts'
import { tunable } from '../tunables.ts'

export interface BinarySource {
  url: string
  sha256: string
}

export const BINARY_ROUTE = '/api/v1/cloud/binary'

export function binaryFromEnv(env: Record<string, string | undefined> = process.env): BinarySource | null {
  const url = tunable('MUSTER_CLOUD_BINARY_URL', env)?.trim()
  const sha = tunable('MUSTER_CLOUD_BINARY_SHA256', env)?.trim().replace(/^sha256:/, '').toLowerCase()
  if (!url && !sha) return null
  if (!url || !sha || !/^[0-9a-f]{64}$/.test(sha) || !/^https?:\/\//.test(url)) {
    throw new MusterError('not-configured', 'MUSTER_CLOUD_BINARY_URL (http/https) and MUSTER_CLOUD_BINARY_SHA256 (64 hex) go together.')
  }
  return { url, sha256: sha }
}
