// The registry's memory: every node's fields in columns (typed arrays, one
// slot a node) rather than an object a node. A million objects, each with
// its name, certificate digest and mac as strings of their own, are four
// million cells the collector walks on every full collection: measured at a
// million nodes, 370 ms of CPU a collection and pauses of 100-400 ms
// (docs/benchmarks.md). In columns a node is one cell (its name) and ~220
// bytes. What few nodes have (an address, replicas, a probe, labels) is kept
// apart; what many share (versions, token ids, label sets) is kept once.
//
// Names are kept as bytes, not strings (src/fabric/node-names.ts).
//
// A NodeEntry (src/fabric/node-entry.ts) is a view of one slot, made on
// demand (cheap, short-lived). A slot holds one machine for good: a name
// rebound to a new certificate, or one that leaves and comes back, gets a new
// slot, and the old slot keeps what it held, so a view never reads another
// machine's fields; changes to the same machine (a heartbeat, a drain, a
// revoke, a new generation) are written in place and every view sees them.
// Slots are not reused: a removed node's ~220 bytes stay until a restart.
import type { Labels } from '../wire/labels.ts'
import type { ReplicaStatus } from '../wire/nodes.ts'
import { NO_LABELS, type NodeFields, type Probe } from './node-fields.ts'
import { NodeNames } from './node-names.ts'
import { widened } from './columns.ts'

export const MAC_LENGTH = 43

const LEGACY = 1
const DRAINED = 2
/** The mac column holds the current credential's mac for the generation in macGeneration and this certificate. */
const MAC_SET = 4
const PROBE_OK = 8
const HEX = /^[0-9a-f]{64}$/

/** Strings many nodes share, kept once each; a column holds their index (-1: null). */
class Interned<T> {
  readonly values: T[] = []
  private readonly index = new Map<string, number>()
  indexOf(key: string | null, make: () => T): number {
    if (key === null) return -1
    let i = this.index.get(key)
    if (i === undefined) {
      i = this.values.length
      this.values.push(make())
      this.index.set(key, i)
    }
    return i
  }
}

const NAN = Number.NaN
export const num = (x: number | null) => (x === null ? NAN : x)
export const orNull = (x: number) => (Number.isNaN(x) ? null : x)

export class NodeTable {
  private capacity = 0
  /** Slots used so far (alive or left). */
  used = 0
  /** The names, by slot, and the slot of each live name (src/fabric/node-names.ts). */
  readonly names = new NodeNames()
  flags = new Uint8Array(0)
  generation = new Float64Array(0)
  previousValidUntil = new Float64Array(0)
  enrolledAt = new Float64Array(0)
  lastSeenAt = new Float64Array(0)
  cpuMillis = new Float64Array(0)
  memoryMB = new Float64Array(0)
  revokedAt = new Float64Array(0)
  macGeneration = new Float64Array(0)
  probeAt = new Float64Array(0)
  /** The certificate's SHA-256 (32 bytes a slot); all zero with no certificate (certKind). */
  cert = new Uint8Array(0)
  /** 0: no certificate, 1: the hex digest in `cert`, 2: a digest of another spelling, in `otherCerts`. */
  certKind = new Uint8Array(0)
  /** The mac's 43 base64url characters (src/fabric/heartbeat.ts compares them in constant time). */
  macs = new Uint8Array(0)
  version = new Int32Array(0)
  tokenId = new Int32Array(0)
  labels = new Int32Array(0)
  probeReason = new Int32Array(0)
  urls: (string | undefined)[] = []
  replicas: (ReplicaStatus[] | undefined)[] = []
  private readonly otherCerts = new Map<number, string>()
  readonly strings = new Interned<string>()
  readonly labelSets = new Interned<Labels>()

  get size(): number {
    return this.names.size
  }

  slotOf(name: string): number {
    return this.names.slotOf(name)
  }

  has(name: string): boolean {
    return this.names.slotOf(name) >= 0
  }

  nameOf(s: number): string {
    return this.names.nameOf(s)
  }

  isLive(s: number): boolean {
    return this.names.isLive(s)
  }

  /** The live slots, in the order they were added. */
  liveSlots(): IterableIterator<number> {
    return this.names.liveSlots(this.used)
  }

  *liveNames(): IterableIterator<string> {
    for (const s of this.liveSlots()) yield this.names.nameOf(s)
  }

  /** Room for `n` nodes at once (a load that knows its count makes no copies on the way). */
  reserve(n: number): void {
    while (this.capacity < n) this.grow(n)
  }

  private grow(atLeast = 0): void {
    const cap = Math.max(1024, this.capacity * 2, atLeast)
    this.flags = widened(this.flags, cap)
    this.generation = widened(this.generation, cap, NAN)
    this.previousValidUntil = widened(this.previousValidUntil, cap, NAN)
    this.enrolledAt = widened(this.enrolledAt, cap, NAN)
    this.lastSeenAt = widened(this.lastSeenAt, cap, NAN)
    this.cpuMillis = widened(this.cpuMillis, cap, NAN)
    this.memoryMB = widened(this.memoryMB, cap, NAN)
    this.revokedAt = widened(this.revokedAt, cap, NAN)
    this.macGeneration = widened(this.macGeneration, cap, NAN)
    this.probeAt = widened(this.probeAt, cap, NAN)
    this.cert = widened(this.cert, cap * 32)
    this.certKind = widened(this.certKind, cap)
    this.macs = widened(this.macs, cap * MAC_LENGTH)
    this.version = widened(this.version, cap, -1)
    this.tokenId = widened(this.tokenId, cap, -1)
    this.labels = widened(this.labels, cap, -1)
    this.probeReason = widened(this.probeReason, cap, -1)
    this.dirty = widened(this.dirty, cap)
    this.names.grow(cap, this.used)
    this.capacity = cap
  }

  /** 1: the slot has a heartbeat not yet written (Registry's flush). */
  dirty = new Uint8Array(0)

  /** A new slot for `name` holding `f` (the name's old slot, if any, is left as it was). */
  add(f: NodeFields, labelsText?: string | null): number {
    if (this.used === this.capacity) this.grow()
    const s = this.used++
    this.names.set(s, f.name)
    this.write(s, f, labelsText)
    return s
  }

  /** The name leaves (its slot stays as it was, for the views taken of it). */
  remove(name: string): boolean {
    return this.names.remove(name)
  }

  /** Sets every field of slot `s` (its name stays). `labelsText`: the labels' JSON as stored, when known. */
  write(s: number, f: NodeFields, labelsText?: string | null): void {
    this.flags[s] = (f.auth === 'legacy' ? LEGACY : 0) | (f.drained ? DRAINED : 0)
    this.generation[s] = f.generation
    this.previousValidUntil[s] = f.previousValidUntil
    this.enrolledAt[s] = f.enrolledAt
    this.lastSeenAt[s] = num(f.lastSeenAt)
    this.cpuMillis[s] = num(f.cpuMillis)
    this.memoryMB[s] = num(f.memoryMB)
    this.revokedAt[s] = num(f.revokedAt)
    this.setCert(s, f.certSha256)
    this.version[s] = this.strings.indexOf(f.version, () => f.version!)
    this.tokenId[s] = this.strings.indexOf(f.tokenId, () => f.tokenId!)
    this.setLabels(s, f.labels, labelsText)
    this.urls[s] = f.url || undefined
    this.replicas[s] = f.replicas.length === 0 ? undefined : f.replicas
    this.setProbe(s, f.probe)
  }

  setCert(s: number, cert: string | null): void {
    this.flags[s]! &= ~MAC_SET // a mac is for one certificate
    this.otherCerts.delete(s)
    const at = s * 32
    if (cert === null) {
      this.certKind[s] = 0
      this.cert.fill(0, at, at + 32)
    } else if (HEX.test(cert)) {
      this.certKind[s] = 1
      for (let i = 0; i < 32; i++) this.cert[at + i] = hexByte(cert, i)
    } else {
      this.certKind[s] = 2
      this.otherCerts.set(s, cert)
    }
  }

  /** Whether slot `s` holds this certificate digest (compared without making the slot's text). */
  certIs(s: number, cert: string | null): boolean {
    const kind = this.certKind[s]
    if (cert === null || kind === 0) return cert === null && kind === 0
    if (kind === 2) return this.otherCerts.get(s) === cert
    if (!HEX.test(cert)) return false
    const at = s * 32
    for (let i = 0; i < 32; i++) if (this.cert[at + i] !== hexByte(cert, i)) return false
    return true
  }

  certOf(s: number): string | null {
    const kind = this.certKind[s]
    if (kind === 0) return null
    if (kind === 2) return this.otherCerts.get(s)!
    const at = s * 32
    let out = ''
    for (let i = 0; i < 32; i++) out += HEX_BYTE[this.cert[at + i]!]
    return out
  }

  setLabels(s: number, labels: Labels, text?: string | null): void {
    const empty = Object.keys(labels).length === 0
    const key = empty ? null : (text ?? JSON.stringify(labels))
    this.labels[s] = this.labelSets.indexOf(key, () => Object.freeze({ ...labels }) as Labels)
  }

  labelsOf(s: number): Labels {
    const i = this.labels[s]!
    return i < 0 ? NO_LABELS : this.labelSets.values[i]!
  }

  setProbe(s: number, p: Probe | undefined): void {
    if (p === undefined) {
      this.probeAt[s] = NAN
      this.flags[s]! &= ~PROBE_OK
      this.probeReason[s] = -1
      return
    }
    this.probeAt[s] = p.at
    this.flags[s] = p.ok ? this.flags[s]! | PROBE_OK : this.flags[s]! & ~PROBE_OK
    this.probeReason[s] = this.strings.indexOf(p.reason ?? null, () => p.reason!)
  }

  probeOkAt(s: number): boolean {
    return (this.flags[s]! & PROBE_OK) !== 0
  }

  probeOf(s: number): Probe | undefined {
    const at = this.probeAt[s]!
    if (Number.isNaN(at)) return undefined
    const r = this.probeReason[s]!
    return r < 0 ? { ok: (this.flags[s]! & PROBE_OK) !== 0, at } : { ok: (this.flags[s]! & PROBE_OK) !== 0, at, reason: this.strings.values[r]! }
  }

  stringAt(i: number): string | null {
    return i < 0 ? null : this.strings.values[i]!
  }

  /** Whether the mac column holds the mac for this slot's generation and certificate. */
  macFresh(s: number): boolean {
    return (this.flags[s]! & MAC_SET) !== 0 && this.macGeneration[s] === this.generation[s]
  }

  setMac(s: number, mac: string): void {
    if (mac.length !== MAC_LENGTH) throw new Error(`a node credential's mac is ${MAC_LENGTH} characters, not ${mac.length}`)
    const at = s * MAC_LENGTH
    for (let i = 0; i < MAC_LENGTH; i++) this.macs[at + i] = mac.charCodeAt(i)
    this.macGeneration[s] = this.generation[s]!
    this.flags[s]! |= MAC_SET
  }

  isLegacy(s: number): boolean {
    return (this.flags[s]! & LEGACY) !== 0
  }

  isDrained(s: number): boolean {
    return (this.flags[s]! & DRAINED) !== 0
  }

  setDrained(s: number, drained: boolean): void {
    this.flags[s] = drained ? this.flags[s]! | DRAINED : this.flags[s]! & ~DRAINED
  }

}

/** The i-th byte of a lowercase hex text (HEX checked it). */
const nibble = (c: number) => (c <= 57 ? c - 48 : c - 87)
const hexByte = (hex: string, i: number) => (nibble(hex.charCodeAt(i * 2)) << 4) | nibble(hex.charCodeAt(i * 2 + 1))

const HEX_BYTE = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'))
