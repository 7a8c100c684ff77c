// A Platform (dist/muster serve) signing people in with a real OpenID provider
// (oidc-provider, in this test process): the provider's users and groups, the
// client secret in a 0600 file, and a fixed port (the redirect URI names it).
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startServe } from './binary.ts'
import { startOidcProvider, type OidcProviderHandle, type TestUser } from './oidc-provider.ts'

export const CLIENT_ID = 'muster'
export const CLIENT_SECRET = 'muster-test-client-secret-0123456789'
export const ROLE_MAP = 'muster-admins=superadmin,developers=operator,readers=viewer'

export const USERS: Record<string, TestUser> = {
  alice: { password: 'alice-pass', email: 'alice@example.com', groups: ['muster-admins', 'everyone'] },
  bob: { password: 'bob-pass', email: 'bob@example.com', groups: ['developers'] },
  carol: { password: 'carol-pass', email: 'carol@example.com', groups: ['everyone'] },
  dave: { password: 'dave-pass', email: 'dave@other.example', groups: ['developers'] },
}

export function freePort(): number {
  const probe = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } })
  const port = probe.port
  probe.stop(true)
  return port
}

export interface OidcPlatform {
  op: OidcProviderHandle
  url: string
  dataDir: string
  callback: string
  serve: Awaited<ReturnType<typeof startServe>>
  /** Stops serve; `between` runs with it stopped (host commands); then serve starts again with the same flags. */
  restart(between?: () => Promise<void>): Promise<void>
  close(): Promise<void>
}

/** Starts the provider and `muster serve --oidc-…`; `extra` adds serve flags. */
export async function startOidcPlatform(opts: { extra?: string[]; users?: Record<string, TestUser>; idTokenTtlSeconds?: number; dataDir?: string } = {}): Promise<OidcPlatform> {
  const port = freePort()
  const url = `http://127.0.0.1:${port}`
  const callback = `${url}/auth/oidc/callback`
  const users = structuredClone(opts.users ?? USERS)
  const op = await startOidcProvider({ users, clients: [{ clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, redirectUris: [callback] }, { clientId: 'other-app', clientSecret: 'other-app-secret-0123456789', redirectUris: ['http://127.0.0.1:9/cb'] }], idTokenTtlSeconds: opts.idTokenTtlSeconds })
  const dir = mkdtempSync(join(tmpdir(), 'muster-oidc-'))
  const dataDir = opts.dataDir ?? join(dir, 'data')
  const secretFile = join(dir, 'client-secret')
  writeFileSync(secretFile, `${CLIENT_SECRET}\n`)
  chmodSync(secretFile, 0o600)
  let serve: OidcPlatform['serve']
  const flags = ['--port', String(port), '--oidc-issuer', op.issuer, '--oidc-client-id', CLIENT_ID, '--oidc-client-secret-file', secretFile, '--oidc-role-map', ROLE_MAP, '--oidc-display-name', 'Example SSO', ...(opts.extra ?? [])]
  try {
    serve = await startServe(dataDir, flags)
  } catch (e) {
    await op.close()
    rmSync(dir, { recursive: true, force: true })
    throw e
  }
  const handle: OidcPlatform = {
    op,
    url,
    dataDir,
    callback,
    serve,
    async restart(between) {
      await serve.stop()
      await between?.()
      serve = await startServe(dataDir, flags)
      handle.serve = serve
    },
    async close() {
      await serve.stop()
      await op.close()
      rmSync(dir, { recursive: true, force: true })
    },
  }
  return handle
}
