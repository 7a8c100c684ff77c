// `muster doctor` (docs/nodes.md): inspects a Platform or a worker from the machine
// it runs on — role, install receipt, data directory ownership and modes,
// joined or not, the Agent port, the Platform over the pinned connection,
// trust key expiry. One line per check: ok, warn or fail.
import { existsSync, readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { apiClient, enrollmentClient } from '../agent/connect.ts'
import { askStandingOf, isDead, wayBack } from '../agent/standing.ts'
import { readAgentConfig, readCredential, readTrustFile, WORKER, type AgentConfig } from '../agent/files.ts'
import { keysValidAt } from '../signed/keys.ts'
import { PlatformChoice } from '../agent/platform-choice.ts'
import { probeCertificate } from '../crypto/pin.ts'
import { certFingerprint, expiresWithin, parseCertificate } from '../crypto/x509.ts'
import { DataDir, DEFAULT_DATA_DIR } from '../datadir.ts'
import type { TrustKey } from '../wire/nodes.ts'
import { caDaysLeft, caWarning, readCa } from '../pki/platform-ca.ts'
import { openPlatformVault, type HostVault } from '../pki/host-vault.ts'
import { serveLockHolder } from '../serve-lock.ts'
import { checkIsolation } from './isolation.ts'
import { localNodePlace } from '../projects/local-node.ts'
import { VERSION } from '../version.ts'
import { MusterError } from '../errors.ts'
import { checkReceiptFiles, readReceipt, type Receipt } from './receipt.ts'
import { tunable } from '../tunables.ts'

export type Status = 'ok' | 'warn' | 'fail'
export interface Check {
  name: string
  status: Status
  message: string
}
export interface DoctorReport {
  ok: boolean
  role: 'platform' | 'worker' | 'unknown'
  dataDir: string
  checks: Check[]
  notes: string[]
}

const FIREWALL_NOTE =
  'doctor cannot see a firewall between the Platform and this node: only the Platform can tell whether it reaches the Agent port (`muster nodes list` on the Platform shows the health probe result).'
const DAY_MS = 86_400_000

export async function runDoctor(opts: { dataDir?: string; root?: string }): Promise<DoctorReport> {
  const root = opts.root ?? '/'
  const checks: Check[] = []
  const add = (name: string, status: Status, message: string) => checks.push({ name, status, message })

  // receipt first: it names the role and, absent a flag, the data directory
  const rr = readReceipt(root)
  const receipt = rr.state === 'ok' ? rr.receipt : undefined
  const dataDir = new DataDir(opts.dataDir ?? tunable('MUSTER_DATA_DIR') ?? (receipt ? join(root, receipt.dataDir) : DEFAULT_DATA_DIR))
  const inferred = dataDir.exists(WORKER.config) || dataDir.exists(WORKER.key) ? 'worker' : dataDir.exists('platform/master.key') ? 'platform' : undefined
  const role = receipt?.role ?? inferred ?? 'unknown'
  if (receipt && inferred && receipt.role !== inferred) add('role', 'warn', `the receipt says ${receipt.role}, but ${dataDir.root} holds ${inferred} data`)
  else add('role', role === 'unknown' ? 'warn' : 'ok', role === 'unknown' ? `no muster data in ${dataDir.root} and no install receipt` : `${role}${receipt ? '' : ' (from the data directory)'}`)
  checkReceipt(rr, receipt, root, add)
  checkDataDir(dataDir, receipt, add)
  if (role === 'worker') {
    await checkWorker(dataDir, add)
    explainStoppedAgent(checks)
  }
  if (role === 'platform') await checkPlatform(dataDir, add)

  return { ok: !checks.some((c) => c.status === 'fail'), role, dataDir: dataDir.root, checks, notes: role === 'platform' ? [] : [FIREWALL_NOTE] }
}

type Add = (name: string, status: Status, message: string) => void

function checkReceipt(rr: ReturnType<typeof readReceipt>, receipt: Receipt | undefined, root: string, add: Add): void {
  if (rr.state === 'absent') return add('receipt', 'warn', `no install receipt at ${rr.path} (not installed with install.sh)`)
  if (rr.state === 'invalid' || !receipt) return add('receipt', 'fail', `${rr.path} is unreadable${rr.state === 'invalid' ? ` (${rr.reason})` : ''}`)
  const { missing, changed } = checkReceiptFiles(receipt, root)
  if (missing.length) return add('receipt', 'fail', `installed files are missing: ${missing.join(', ')}; run install.sh again`)
  if (changed.length) return add('receipt', 'warn', `changed since install: ${changed.join(', ')}`)
  if (receipt.version !== VERSION) return add('receipt', 'warn', `installed ${receipt.version}, but this binary is ${VERSION}`)
  add('receipt', 'ok', `${receipt.role} ${receipt.version} installed ${receipt.installedAt} for account ${receipt.account}`)
}

function checkDataDir(dataDir: DataDir, receipt: Receipt | undefined, add: Add): void {
  if (!existsSync(dataDir.root)) return add('data-dir', 'fail', `${dataDir.root} does not exist`)
  const st = statSync(dataDir.root)
  const owner = receipt?.uid
  if (owner !== undefined && st.uid !== owner) add('data-owner', 'fail', `${dataDir.root} belongs to uid ${st.uid}, not ${receipt!.account} (uid ${owner}): chown -R ${receipt!.account}: ${dataDir.root}`)
  else if (process.getuid && st.uid !== process.getuid()) add('data-owner', 'warn', `${dataDir.root} belongs to uid ${st.uid}; run doctor as that account to check everything`)
  else add('data-owner', 'ok', `${dataDir.root} belongs to uid ${st.uid}`)
  const loose: string[] = []
  const walk = (dir: string, depth: number) => {
    for (const name of readdirSync(dir)) {
      const p = join(dir, name)
      const s = statSync(p)
      if (s.isDirectory() ? (s.mode & 0o077) !== 0 : s.isFile() && (s.mode & 0o077) !== 0 && !name.endsWith('.lock')) loose.push(`${p} (${(s.mode & 0o777).toString(8)})`)
      if (s.isDirectory() && depth < 3) walk(p, depth + 1)
    }
  }
  try {
    if ((st.mode & 0o077) !== 0) loose.push(`${dataDir.root} (${(st.mode & 0o777).toString(8)})`)
    for (const sub of ['platform', 'worker']) if (dataDir.exists(sub)) walk(dataDir.path(sub), 0)
  } catch (e) {
    return add('data-modes', 'fail', `cannot read ${dataDir.root}: ${(e as Error).message}`)
  }
  if (loose.length) add('data-modes', 'fail', `readable by group or others: ${loose.slice(0, 5).join(', ')}${loose.length > 5 ? ` and ${loose.length - 5} more` : ''}; fix with chmod 700 (folders) / 600 (files)`)
  else add('data-modes', 'ok', 'folders 0700, secret files 0600')
}

async function checkWorker(dataDir: DataDir, add: Add): Promise<void> {
  let config: AgentConfig | undefined
  try {
    config = readAgentConfig(dataDir)
  } catch (e) {
    return add('joined', 'fail', (e as Error).message)
  }
  if (!config) return add('joined', 'fail', `not joined: run \`muster worker join --data-dir ${dataDir.root} …\``)
  add('joined', 'ok', `joined ${config.enrollmentUrl} as ${config.nodeId} (API ${config.platformUrl})`)
  // the Agent port: something listening, and presenting this node's certificate
  const mine = dataDir.readSecretText(WORKER.cert)
  try {
    const seen = await probeCertificate('127.0.0.1', config.port, { timeoutMs: 3000 })
    if (mine && seen.fingerprint !== certFingerprint(mine)) add('agent-port', 'fail', `port ${config.port} answers with another certificate than this node's`)
    else add('agent-port', 'ok', `the Agent listens on port ${config.port}`)
  } catch {
    add('agent-port', 'fail', `nothing answers TLS on port ${config.port}: start the Agent (muster agent --data-dir ${dataDir.root})`)
  }
  if (mine && expiresWithin(mine, 30)) add('agent-cert', 'warn', `the agent certificate expires ${parseCertificate(mine).notAfter.toISOString()}`)
  try {
    await enrollmentClient(config).nodes.trust()
    add('platform', 'ok', `${config.enrollmentUrl} reachable over the pinned connection`)
  } catch (e) {
    add('platform', 'fail', `${config.enrollmentUrl}: ${(e as Error).message}`)
  }
  // several Platforms: the one the Agent uses now, among those it knows (worker/platforms.json)
  const choice = new PlatformChoice(dataDir, () => config)
  const api = choice.current
  if (choice.known.length > 1) add('platform-in-use', 'ok', `the Agent uses ${api} (${choice.known.length} Platforms known: ${choice.known.map((p) => p.url).join(', ')})`)
  else add('platform-in-use', 'ok', `the Agent uses ${api} (the only Platform it knows)`)
  try {
    await apiClient(choice.connection(), readCredential(dataDir)).health()
    add('platform-api', 'ok', `${api} answers`)
    await checkCredential(dataDir, config, choice.connection(), add)
  } catch (e) {
    add('platform-api', 'fail', `${api}: ${(e as Error).message}`)
  }
  trustExpiry('trust-keys', readTrustFile(dataDir)?.keys ?? [], add)
  checkIsolation(dataDir, add)
}

/** An Agent that stopped because its credential is dead is not helped by starting it: say so at the port check. */
function explainStoppedAgent(checks: Check[]): void {
  const port = checks.find((c) => c.name === 'agent-port' && c.status === 'fail' && c.message.startsWith('nothing answers'))
  if (!port || !checks.some((c) => c.name === 'credential' && c.status === 'fail' && c.message.includes('for good'))) return
  port.message = `${port.message.split(':')[0]}: the Agent stopped because the Platform refuses this node's credential; join again as the credential check below says, then start it`
}

/** The node's credential as the Platform holds it (docs/operations.md): a dead one fails, naming the way back. */
async function checkCredential(dataDir: DataDir, config: AgentConfig, connection: AgentConfig, add: Add): Promise<void> {
  try {
    const r = await askStandingOf(dataDir, connection)
    if (isDead(r.standing)) return add('credential', 'fail', `the Platform refuses this node's credential for good: ${wayBack(r.standing, config, dataDir.root)}`)
    add('credential', 'ok', `the Platform accepts ${config.nodeId}'s credential; it shows the node as ${r.state ?? 'known'}${r.reason ? ` (${r.reason})` : ''}`)
  } catch (e) {
    const old = e instanceof MusterError && e.code === 'not-found'
    add('credential', old ? 'warn' : 'fail', old ? 'the Platform is too old to say whether this node\'s credential works (update it)' : `cannot ask the Platform about this node's credential: ${(e as Error).message}`)
  }
}

async function checkPlatform(dataDir: DataDir, add: Add): Promise<void> {
  const pid = (() => {
    try {
      return serveLockHolder(dataDir)
    } catch {
      return null
    }
  })()
  add('serve', pid ? 'ok' : 'warn', pid ? `muster serve is running (pid ${pid})` : 'muster serve is not running on this data directory')
  // The local node (serve --local-node) records who its replicas run as, like an Agent.
  const local = localNodePlace(dataDir.root)
  if (dataDir.exists(local.isolationFile)) checkIsolation(dataDir, add, { prefix: 'local-node', file: local.isolationFile, secrets: local.secrets, recorder: 'the local node' })
  // The Platform's secrets are sealed in its store: read through its vault (this needs master.key).
  let host: HostVault
  try {
    host = await openPlatformVault(dataDir)
  } catch (e) {
    return add('platform-ca', 'warn', `cannot open the Platform's store to check its CA and keys: ${(e as Error).message}`)
  }
  try {
    await checkSecrets(host.vault, add)
  } finally {
    await host.close()
  }
}

async function checkSecrets(vault: HostVault['vault'], add: Add): Promise<void> {
  const now = Date.now()
  try {
    const ca = await readCa(vault)
    if (!ca) add('platform-ca', 'warn', 'no Platform CA yet: `muster serve` makes it at its next start')
    else {
      const warning = caWarning(ca, now)
      add('platform-ca', caDaysLeft(ca, now) < 0 ? 'fail' : warning ? 'warn' : 'ok', warning ?? `pin ${ca.pin}, valid until ${ca.notAfter.toISOString()} (${caDaysLeft(ca, now)} days)`)
    }
  } catch (e) {
    add('platform-ca', 'fail', (e as Error).message)
  }
  // The newest listener certificate (each Platform sharing the store keeps its own, under tls/<addresses>/).
  const listenerPems = await Promise.all((await vault.list('tls/')).filter((n) => n.endsWith('cert.pem')).map((n) => vault.get(n)))
  const listenerPem = listenerPems.filter((p): p is string => Boolean(p)).sort((a, b) => notAfterOf(b) - notAfterOf(a))[0]
  if (listenerPem) {
    try {
      const c = parseCertificate(listenerPem)
      const soon = expiresWithin(listenerPem, 30, now)
      add('listener-cert', soon ? 'warn' : 'ok', `valid until ${c.notAfter.toISOString()}${soon ? ' (renewed by the running Platform, or at the next start)' : ''}`)
    } catch (e) {
      add('listener-cert', 'fail', (e as Error).message)
    }
  }
  const keys: TrustKey[] = []
  try {
    for (const name of await vault.list('trust/')) {
      if (name.endsWith('.json')) keys.push(JSON.parse((await vault.get(name))!) as TrustKey)
    }
  } catch (e) {
    return add('trust-keys', 'fail', (e as Error).message)
  }
  if (keys.length > 0) trustExpiry('trust-keys', keys, add)
}

function notAfterOf(pem: string): number {
  try {
    return parseCertificate(pem).notAfter.getTime()
  } catch {
    return 0
  }
}

function trustExpiry(name: string, keys: TrustKey[], add: Add): void {
  const now = Date.now()
  if (keysValidAt(keys, now).length === 0) return add(name, 'fail', keys.length ? 'no trust key is valid now: run `muster worker refresh-trust`' : 'no trust keys')
  const last = Math.max(...keys.map((k) => Date.parse(k.notAfter)))
  const days = Math.floor((last - now) / DAY_MS)
  add(name, days <= 30 ? 'warn' : 'ok', `${keys.length} key(s); the newest is valid until ${new Date(last).toISOString()} (${days} days)`)
}
