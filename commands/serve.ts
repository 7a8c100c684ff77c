import { defineCommand } from 'citty'
import { dataDirArg, intArg, logFormatArg, multiArg, UsageError } from './_args.ts'
import { consola } from 'consola'
import { ENGINE_ENV } from '../src/swap/protocol.ts'
import { tunable } from '../src/tunables.ts'
import { esc } from './_out.ts'

/** The --oidc-* flags, or --oidc-config FILE (one or the other). */
async function oidcOptions(args: Record<string, unknown>) {
  const flag = (k: string) => (typeof args[k] === 'string' && args[k] !== '' ? (args[k] as string) : undefined)
  const given = ['oidc-issuer', 'oidc-client-id', 'oidc-client-secret-file', 'oidc-groups-claim', 'oidc-role-map', 'oidc-allowed-domains', 'oidc-display-name'].filter((k) => flag(k))
  if (flag('oidc-config')) {
    if (given.length) throw new UsageError(`--oidc-config names the provider settings already: give it, or --${given[0]}, not both`)
    const { readOidcFile } = await import('../src/auth/oidc/config.ts')
    const o = readOidcFile(flag('oidc-config')!)
    return { oidc: { ...o, only: Boolean(o.only || args['oidc-only']) } }
  }
  if (!flag('oidc-issuer')) {
    if (given.length || args['oidc-only']) throw new UsageError(`--${given[0] ?? 'oidc-only'} needs --oidc-issuer URL (the identity provider)`)
    return {}
  }
  for (const k of ['oidc-client-id', 'oidc-client-secret-file', 'oidc-role-map']) if (!flag(k)) throw new UsageError(`--oidc-issuer needs --${k} too`)
  return {
    oidc: {
      issuer: flag('oidc-issuer')!,
      clientId: flag('oidc-client-id')!,
      clientSecretFile: flag('oidc-client-secret-file')!,
      roleMap: flag('oidc-role-map')!,
      groupsClaim: flag('oidc-groups-claim'),
      allowedDomains: flag('oidc-allowed-domains'),
      displayName: flag('oidc-display-name'),
      only: Boolean(args['oidc-only']),
    },
  }
}

export default defineCommand({
  meta: { name: 'serve', description: 'Run a Platform: the node registry, enrollment authority and API (SIGHUP swaps in the binary on disk without closing a port)' },
  args: {
    ...dataDirArg,
    host: { type: 'string', valueHint: 'ADDR', default: '127.0.0.1', description: 'Address the API listens on (off loopback it serves HTTPS with a certificate from the Platform CA)' },
    port: { type: 'string', valueHint: 'PORT', default: '7380', description: 'Port the API listens on (0 picks a free one)' },
    'public-url': { type: 'string', valueHint: 'URL', description: 'URL operators and nodes use to reach this Platform' },
    'tls-cert': { type: 'string', valueHint: 'FILE', description: 'Serve the API over HTTPS with this certificate (PEM)' },
    'tls-key': { type: 'string', valueHint: 'FILE', description: 'Private key for --tls-cert (PEM)' },
    'allow-insecure-node-traffic': { type: 'boolean', description: 'Allow remote dispatch with a plain-http --public-url (only behind a TLS-terminating proxy on a private link)' },
    'enrollment-port': { type: 'string', valueHint: 'PORT', description: 'Open the HTTPS enrollment listener on this port (≥ 1024); with a loopback --host, give --host ADDR too so nodes reach the API' },
    'enrollment-address': { type: 'string', valueHint: 'ADDR', description: 'Address nodes reach the listener by, and that it binds (repeatable; default: --host\'s address and localhost, else the first routable IPv4 and localhost)' },
    'remote-dispatch': { type: 'boolean', description: 'Allow nodes to enroll (implied by --enrollment-port)' },
    'local-node': { type: 'boolean', default: false, description: 'Run an Agent in-process as node `local` (off by default; only a superadmin\'s projects run there, each project as a uid of its own in its own cgroups)', negativeDescription: 'Do not run the local node (the default)' },
    'local-run-as': { type: 'string', valueHint: 'USER', description: 'Run the local node\'s replicas as this account instead of a uid per project (`root` only by that name: they can then read platform/master.key)' },
    'cloud-identity-roots': { type: 'string', valueHint: 'FILE', description: 'More roots for cloud identity joins: JSON {"aws":{"REGION":"PEM"},"gcp":{"KID":"PEM"},"azure":["PEM"]} (AWS certificates and Microsoft roots ship built in)' },
    'nodes-file': { type: 'string', valueHint: 'FILE', description: 'Operator-declared nodes: JSON {"nodes":[{"name","labels"?,"drained"?}]}; their names enroll only with their own enrollment' },
    'node-auth': { type: 'enum', options: ['legacy', 'both', 'enrolled'], default: 'both', description: 'How nodes authenticate: shared fleet token, both, or enrolled credentials only' },
    'fleet-token-file': { type: 'string', valueHint: 'FILE', description: 'File holding the legacy fleet-wide registration token' },
    'node-stale-seconds': { type: 'string', valueHint: 'SECONDS', default: '45', description: 'A node without a heartbeat this long is unreachable' },
    'reschedule-grace-seconds': { type: 'string', valueHint: 'SECONDS', default: '60', description: 'How long an unreachable node keeps its replicas before they move' },
    'enroll-rate': { type: 'string', valueHint: 'N', default: '500', description: 'Enroll requests admitted per second' },
    'enroll-burst': { type: 'string', valueHint: 'N', default: '1000', description: 'Enroll burst size' },
    'enroll-in-flight': { type: 'string', valueHint: 'N', default: '256', description: 'Enroll requests handled at once' },
    'heartbeat-rate': { type: 'string', valueHint: 'N', default: '50000', description: 'Heartbeats admitted per second' },
    'heartbeat-burst': { type: 'string', valueHint: 'N', default: '100000', description: 'Heartbeat burst size' },
    'audit-max-entries': { type: 'string', valueHint: 'N', default: '100000', description: 'Audit entries kept per budget (actions; refusals such as failed logins have their own)' },
    'audit-max-days': { type: 'string', valueHint: 'DAYS', default: '365', description: 'Audit entries older than this are dropped' },
    database: { type: 'string', valueHint: 'URL', description: 'PostgreSQL store (postgres://…). A password here shows in `ps`: give such a URL in $MUSTER_DATABASE_URL or --database-file. Default: SQLite muster.db in the data directory' },
    'database-file': { type: 'string', valueHint: 'FILE', description: 'File (mode 0600) holding the PostgreSQL URL, password included' },
    'oidc-issuer': { type: 'string', valueHint: 'URL', description: 'Sign people in with this OpenID provider (https; its /.well-known/openid-configuration must answer)' },
    'oidc-client-id': { type: 'string', valueHint: 'ID', description: 'The client id the provider gave muster (redirect URI to register: <public URL>/auth/oidc/callback)' },
    'oidc-client-secret-file': { type: 'string', valueHint: 'FILE', description: 'File (mode 0600) holding the client secret (never on the command line)' },
    'oidc-groups-claim': { type: 'string', valueHint: 'CLAIM', description: 'The ID token claim listing the groups (default: groups)' },
    'oidc-role-map': { type: 'string', valueHint: 'MAP', description: "Group to role: 'admins=superadmin,devs=operator,*=viewer' (a user with no mapped group is refused)" },
    'oidc-allowed-domains': { type: 'string', valueHint: 'LIST', description: 'Only e-mail domains in this comma-separated list may sign in' },
    'oidc-display-name': { type: 'string', valueHint: 'NAME', description: 'The name on the dashboard\'s "Sign in with …" button' },
    'oidc-only': { type: 'boolean', description: 'No password login: only host-local commands and break-glass remain beside the provider' },
    'oidc-config': { type: 'string', valueHint: 'FILE', description: 'The --oidc-* settings as JSON {issuer, clientId, clientSecretFile, roleMap, …} instead of flags' },
    ...logFormatArg,
  },
  async run({ args, rawArgs }) {
    if (args['log-format'] === 'json') (await import('../src/log.ts')).setLogFormat('json', consola)
    const port = intArg(args, 'port', 0, 65535) ?? 7380
    const enrollmentPort = intArg(args, 'enrollment-port', 0, 65535)
    if (enrollmentPort !== undefined && enrollmentPort !== 0 && enrollmentPort < 1024) throw new UsageError(`--enrollment-port must be 1024 or higher (got ${enrollmentPort}); ports below 1024 need root privileges muster does not take`)
    if (Boolean(args['tls-cert']) !== Boolean(args['tls-key'])) throw new UsageError('--tls-cert and --tls-key go together')
    if (args['local-run-as'] && args['local-node'] !== true) throw new UsageError('--local-run-as says who the local node\'s replicas run as: give --local-node too')
    const { serve } = await import('../src/platform/serve.ts')
    const { resolveDataDir } = await import('../src/datadir.ts')
    const dataDir = resolveDataDir(args['data-dir'])
    if (args.database && args['database-file']) throw new UsageError('--database and --database-file name the same thing: give one')
    const db = await import('../src/store/database-url.ts')
    // An engine gets serve's --database URL in its environment (never on argv).
    let database = db.serveDatabaseUrl({ database: args.database, databaseFile: args['database-file'] })
    if (database) {
      // PostgreSQL, or the data directory's own SQLite file; nothing else.
      const { storeUrlFor } = await import('../src/store/open.ts')
      const { DataDir } = await import('../src/datadir.ts')
      try {
        database = storeUrlFor(new DataDir(dataDir), database)
      } catch (e) {
        throw new UsageError(`--database: ${(e as Error).message}`)
      }
    }
    const options = {
      dataDir,
      host: args.host,
      port,
      publicUrl: args['public-url'],
      allowInsecureNodeTraffic: Boolean(args['allow-insecure-node-traffic']),
      tlsCert: args['tls-cert'],
      tlsKey: args['tls-key'],
      enrollmentPort,
      enrollmentAddresses: multiArg(rawArgs, 'enrollment-address'),
      remoteDispatch: Boolean(args['remote-dispatch']),
      localNode: args['local-node'] === true,
      localRunAs: args['local-run-as'] || undefined,
      nodesFile: args['nodes-file'],
      cloudIdentityRoots: args['cloud-identity-roots'],
      nodeAuth: args['node-auth'] as 'legacy' | 'both' | 'enrolled',
      fleetTokenFile: args['fleet-token-file'],
      nodeStaleAfterMs: (intArg(args, 'node-stale-seconds', 1, 86400) ?? 45) * 1000,
      rescheduleGraceMs: (intArg(args, 'reschedule-grace-seconds', 0, 86400) ?? 60) * 1000,
      database,
      ...(await oidcOptions(args)),
      auditRetention: { maxEntries: intArg(args, 'audit-max-entries', 10, 100_000_000) ?? 100_000, maxAgeMs: (intArg(args, 'audit-max-days', 1, 36_500) ?? 365) * 86_400_000 },
      enrollLimit: {
        perSecond: intArg(args, 'enroll-rate', 1, 1_000_000) ?? 500,
        burst: intArg(args, 'enroll-burst', 1, 10_000_000) ?? 1000,
        maxInFlight: intArg(args, 'enroll-in-flight', 1, 100_000) ?? 256,
      },
      heartbeatLimit: {
        perSecond: intArg(args, 'heartbeat-rate', 1, 10_000_000) ?? 50_000,
        burst: intArg(args, 'heartbeat-burst', 1, 100_000_000) ?? 100_000,
        maxInFlight: 4096,
      },
    }
    // `muster serve` itself supervises (src/swap/supervisor.ts): it holds the lock and runs this same command line as its engine.
    const role = tunable(ENGINE_ENV)
    delete process.env[ENGINE_ENV]
    if (role !== 'first' && role !== 'takeover') {
      const password = args.database ? db.databasePassword(args.database) : undefined
      // The password already left this process's command line as it started (commands/_argv-first.ts).
      if (password) {
        consola.warn(esc`--database carries the store's password on the command line, where any local user reads it (ps); give the URL in $MUSTER_DATABASE_URL or --database-file FILE (mode 0600) instead.`)
      }
      // Before anything is created (the lock, the CA, the superadmin): the setup, the data directory, the ports, the files.
      const { preflightServe } = await import('../src/platform/serve-preflight.ts')
      const self = /(^|\/)muster$/.test(process.argv0) ? process.argv0 : 'muster'
      await preflightServe(options, [self, 'serve', ...db.withoutDatabasePassword(rawArgs)])
      const { supervise } = await import('../src/swap/supervisor.ts')
      process.exit(await supervise(dataDir, { database }))
    }
    await serve(options, role)
  },
})
