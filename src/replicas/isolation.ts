// Who a node's replicas run as (docs/security.md, "Who replicas run as"). A
// replica must not read the node's key or credential: where the Agent can
// switch users (root, or CAP_SETUID + CAP_SETGID + CAP_KILL as install.sh's
// unit and the bootstrap line grant), each project runs as a uid of its own
// from the Agent's range (src/replicas/uids.ts), which cannot enter the data
// directory nor touch another project; `--run-as USER` puts every replica under
// one account instead (`--run-as root` only when asked for by name). Where it
// cannot switch (a laptop, `muster demo`), replicas run as the Agent's own user:
// the Agent warns at start and `doctor` fails. worker/isolation.json records
// which, with the replicas' containment (cgroups, limits), for `doctor`.
//
// An Agent given capabilities as ambient ones (systemd's AmbientCapabilities=)
// would hand them on to every program it starts: it clears its inheritable
// and ambient sets first, so a replica starts with no capability at all.
import { readFileSync, statSync } from 'node:fs'
import type { DataDir } from '../datadir.ts'
import type { CgroupsFound } from './cgroups.ts'
import { ProjectUids, UIDS_FILE } from './uids.ts'
import { MusterError } from '../errors.ts'
import { log } from '../log.ts'

export const DEFAULT_RUN_AS = 'muster-run'
export const ISOLATION_FILE = 'worker/isolation.json'

const CAP_KILL = 5
const CAP_SETGID = 6
const CAP_SETUID = 7
const NEEDED = (1n << BigInt(CAP_KILL)) | (1n << BigInt(CAP_SETGID)) | (1n << BigInt(CAP_SETUID))

export interface RunAs {
  user: string
  uid: number
  gid: number
  /** The account's home when it has one to work in, else '/'. */
  home: string
}

/** What worker/isolation.json holds. */
export interface Isolation {
  isolated: boolean
  /** The account replicas run as (--run-as, or the Agent's own), or 'per-project'. */
  user: string
  /** That account's uid; per project: the first uid of the Agent's range. */
  uid: number
  gid: number
  /** Why replicas are not isolated (a one-line reason with the way out). */
  reason?: string
  /** 'cgroup': each replica in its own cgroup; else its process group (and its project's uid). */
  containment?: 'cgroup' | 'process-group'
  /** The Agent's cgroup subtree. */
  cgroup?: string
  /** Whether --cpu and --memory are enforced, and where. */
  limits?: 'cgroup2' | 'cgroup1' | null
  /** Why replicas have no cgroup, or their limits are not enforced. */
  containmentReason?: string
  checkedAt: string
}

/**
 * Whose replicas these are: an Agent's, or the Platform's own node (`serve
 * --local-node`), which keeps its files under platform/local-node/ and takes
 * a cgroup subtree and a uid slice of its own, never the Agent's on the same
 * data directory.
 */
export interface ReplicaPlace {
  /** Names the cgroup subtree of a root runner (src/replicas/cgroups.ts). */
  cgroupId: string
  /** Where the uids given to projects are kept, and what was decided (for doctor). */
  uidsFile: string
  isolationFile: string
  /** Set for the local node: its uid slice is another than an Agent's on the same data directory. */
  uidSalt?: string
  /** Who runs them, in messages. */
  runner: 'Agent' | 'Platform'
  /** Before each of its log lines ('' for an Agent, whose log is its own). */
  label: string
  /** The flag naming who they run as. */
  flag: '--run-as' | '--local-run-as'
  /** What a replica must not read, in messages. */
  secrets: string
  /** How the runner gets the capabilities it needs. */
  grant: string
}

export const AGENT_PLACE = (root: string): ReplicaPlace => ({
  cgroupId: root,
  uidsFile: UIDS_FILE,
  isolationFile: ISOLATION_FILE,
  runner: 'Agent',
  label: '',
  flag: '--run-as',
  secrets: "this node's key and credential",
  grant: "install.sh's unit and the bootstrap line grant them",
})

/** Who runs each project's replicas: an account for all, a uid per project, or the Agent itself (undefined). */
export type RunAsFor = (project: string) => RunAs | undefined

interface PasswdEntry {
  name: string
  uid: number
  gid: number
  home: string
}

function passwd(): PasswdEntry[] {
  try {
    return readFileSync('/etc/passwd', 'utf8')
      .split('\n')
      .map((l) => l.split(':'))
      .filter((f) => f.length >= 7 && /^\d+$/.test(f[2]!) && /^\d+$/.test(f[3]!))
      .map((f) => ({ name: f[0]!, uid: Number(f[2]), gid: Number(f[3]), home: f[5]! }))
  } catch {
    return []
  }
}

/** An account by name (or `UID:GID`), or undefined. */
export function findAccount(spec: string): RunAs | undefined {
  const ids = /^(\d{1,10}):(\d{1,10})$/.exec(spec)
  if (ids) return { user: spec, uid: Number(ids[1]), gid: Number(ids[2]), home: '/' }
  const e = passwd().find((p) => p.name === spec)
  return e ? { user: e.name, uid: e.uid, gid: e.gid, home: usableHome(e) } : undefined
}

function usableHome(e: PasswdEntry): string {
  try {
    const s = statSync(e.home)
    return s.isDirectory() && s.uid === e.uid ? e.home : '/'
  } catch {
    return '/'
  }
}

/** The capability sets of this thread (hex bitmasks from /proc), 0n where unknown. */
export function capabilities(): { eff: bigint; inh: bigint; amb: bigint } {
  let text = ''
  try {
    text = readFileSync('/proc/thread-self/status', 'utf8')
  } catch {
    try {
      text = readFileSync('/proc/self/status', 'utf8')
    } catch {}
  }
  const get = (k: string) => {
    const line = text.split('\n').find((l) => l.startsWith(`${k}:`))
    const hex = line?.slice(k.length + 1).trim() ?? ''
    return /^[0-9a-f]{1,16}$/.test(hex) ? BigInt(`0x${hex}`) : 0n
  }
  return { eff: get('CapEff'), inh: get('CapInh'), amb: get('CapAmb') }
}

/** Whether this process can start replicas as another user and stop them. */
export function canSwitchUser(): boolean {
  if (process.getuid?.() === 0) return true
  return (capabilities().eff & NEEDED) === NEEDED
}

/** Clears this thread's inheritable (and so its ambient) capabilities; true when none is left. */
export async function clearInheritedCapabilities(): Promise<boolean> {
  const before = capabilities()
  if (before.inh === 0n && before.amb === 0n) return true
  try {
    const { dlopen, FFIType, ptr } = await import('bun:ffi')
    let lib: { symbols: { capget: (h: number, d: number) => number; capset: (h: number, d: number) => number } } | undefined
    for (const name of ['libc.so.6', 'libc.musl-x86_64.so.1', 'libc.musl-aarch64.so.1']) {
      try {
        lib = dlopen(name, { capget: { args: [FFIType.ptr, FFIType.ptr], returns: FFIType.i32 }, capset: { args: [FFIType.ptr, FFIType.ptr], returns: FFIType.i32 } }) as unknown as typeof lib
        break
      } catch {}
    }
    if (!lib) return false
    // struct __user_cap_header_struct { u32 version = _LINUX_CAPABILITY_VERSION_3; int pid = 0 }
    const header = new Uint8Array(8)
    new DataView(header.buffer).setUint32(0, 0x20080522, true)
    // struct __user_cap_data_struct { u32 effective, permitted, inheritable } [2]
    const data = new Uint8Array(24)
    if (lib.symbols.capget(ptr(header), ptr(data)) !== 0) return false
    const d = new DataView(data.buffer)
    d.setUint32(8, 0, true)
    d.setUint32(20, 0, true)
    if (lib.symbols.capset(ptr(header), ptr(data)) !== 0) return false
  } catch (e) {
    log.debug(`cannot clear capabilities: ${(e as Error).message}`)
    return false
  }
  const after = capabilities()
  return after.inh === 0n && after.amb === 0n
}

/**
 * Decides who replicas run as and records it with their containment. `runAs`:
 * the --run-as flag (an account that must exist, and a switch the Agent must
 * be able to make); without it, a uid per project when the Agent can switch.
 */
export async function decideIsolation(dataDir: DataDir | undefined, runAsFlag: string | undefined, contained?: CgroupsFound, place: ReplicaPlace = AGENT_PLACE(dataDir?.root ?? '')): Promise<{ runAs: RunAsFor; isolation: Isolation }> {
  const { runner, flag, secrets, label } = place
  if (!(await clearInheritedCapabilities())) {
    throw new MusterError('insecure-permissions', `This ${runner} holds ambient capabilities it cannot clear, so every replica would inherit them; run it without AmbientCapabilities= or as root.`)
  }
  const ownUid = process.getuid?.() ?? -1
  const ownGid = process.getgid?.() ?? -1
  const own = passwd().find((p) => p.uid === ownUid)?.name ?? String(ownUid)
  const can = canSwitchUser()
  const containment: Pick<Isolation, 'containment' | 'cgroup' | 'limits' | 'containmentReason'> = contained
    ? { containment: contained.cgroups ? 'cgroup' : 'process-group', ...(contained.cgroups ? { cgroup: contained.cgroups.base } : {}), limits: contained.cgroups?.limitsVia ?? null, ...(contained.reason || contained.limitsReason ? { containmentReason: (contained.reason ?? contained.limitsReason)! } : {}) }
    : {}
  const record = (i: Omit<Isolation, 'checkedAt'>) => {
    const isolation = { ...i, ...containment, checkedAt: new Date().toISOString() }
    dataDir?.writeSecret(place.isolationFile, `${JSON.stringify(isolation, null, 2)}\n`)
    return isolation
  }
  if (runAsFlag !== undefined) {
    const account = findAccount(runAsFlag)
    if (!account) throw new MusterError('invalid-request', `${flag} ${runAsFlag}: no such account on this machine (create it, e.g. useradd --system --no-create-home --shell /usr/sbin/nologin ${runAsFlag}).`)
    if (account.uid === ownUid && account.uid !== 0) throw new MusterError('invalid-request', `${flag} ${runAsFlag}: replicas must run as an account other than the ${runner}'s own.`)
    if (account.uid === 0 && runAsFlag !== 'root') throw new MusterError('invalid-request', `${flag} ${runAsFlag}: that is root; to run replicas as root, say ${flag} root.`)
    if (!can) throw new MusterError('forbidden', `${flag} ${runAsFlag} needs ${runner === 'Agent' ? 'an Agent' : 'a Platform'} running as root or with CAP_SETUID, CAP_SETGID and CAP_KILL (${place.grant}).`)
    if (account.uid === 0) {
      const reason = `this ${runner} was told to run them as root (${flag} root)`
      log.warn(`${label}replicas run as root and can read ${secrets}: ${reason}`)
      return { runAs: () => account, isolation: record({ isolated: false, user: 'root', uid: 0, gid: 0, reason }) }
    }
    log.info(`${label}replicas run as ${account.user} (uid ${account.uid}), which cannot read ${secrets}`)
    return { runAs: () => account, isolation: record({ isolated: true, user: account.user, uid: account.uid, gid: account.gid }) }
  }
  if (can && dataDir) {
    const uids = ProjectUids.open(dataDir, place.uidsFile, place.uidSalt)
    log.info(`${label}each project's replicas run as a uid of their own (from ${uids.first}), which cannot read ${secrets} nor touch another project`)
    const runAs = (project: string): RunAs => {
      const uid = uids.uidFor(project)
      return { user: String(uid), uid, gid: uid, home: '/' }
    }
    return { runAs, isolation: record({ isolated: true, user: 'per-project', uid: uids.first, gid: uids.first }) }
  }
  const reason = `this ${runner} runs as ${own} without root or CAP_SETUID, CAP_SETGID and CAP_KILL (${place.grant})`
  log.warn(`${label}replicas run as ${own}, the ${runner}'s own user, and can read ${secrets}: ${reason}`)
  return { runAs: () => undefined, isolation: record({ isolated: false, user: own, uid: ownUid, gid: ownGid, reason }) }
}

/** What the last Agent (or local node: its place's file) recorded, or undefined. */
export function readIsolation(dataDir: DataDir, file = ISOLATION_FILE): Isolation | undefined {
  try {
    const v = JSON.parse(dataDir.readSecretText(file) ?? 'null') as Isolation | null
    return v && typeof v.isolated === 'boolean' ? v : undefined
  } catch {
    return undefined
  }
}
