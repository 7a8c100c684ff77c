// `muster logout`: revokes the token `muster login` saved (DELETE
// /api/v1/api-tokens/:id with the token itself). True when it was revoked now,
// false when the Platform no longer took it (expired, revoked, or the Platform
// forgot it); any other failure (unreachable, refused) is thrown, and the
// caller keeps the file, since the token may still work.
import { MusterError } from '../errors.ts'
import { createClient } from './index.ts'

type Fetch = (url: string, init: RequestInit) => Promise<Response>

/** `fetchImpl` authenticates the Platform (the pinned fetch saved with the login). */
export async function logoutSaved(saved: { url: string; token: string }, fetchImpl?: Fetch): Promise<boolean> {
  const id = /^mat_([a-z2-7]{16})\./.exec(saved.token)?.[1]
  if (!id) return false
  try {
    await createClient({ url: saved.url, token: saved.token, ...(fetchImpl ? { fetch: fetchImpl } : {}) }).auth.revokeApiToken(id)
    return true
  } catch (e) {
    if (e instanceof MusterError && e.code === 'unauthorized') return false
    if (e instanceof MusterError) throw new MusterError(e.code, `Could not revoke the saved token on ${saved.url}: ${e.message} The file is kept; run \`muster logout\` again, or revoke token ${id} with \`muster tokens revoke ${id}\`.`, e.detail)
    throw e
  }
}
