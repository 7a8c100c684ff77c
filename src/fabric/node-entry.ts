// A NodeEntry: one node of the registry, a view of its slot in the columns
// (src/fabric/node-table.ts): reads and writes go to the columns. Made for
// each read of a node, so nothing a node holds is an object of its own.
import type { Labels } from '../wire/labels.ts'
import type { ReplicaStatus } from '../wire/nodes.ts'
import { NO_REPLICAS, type NodeFields, type Probe } from './node-fields.ts'
import { num, orNull, type NodeTable } from './node-table.ts'

/** One node of the table (a view of its slot: reads and writes go to the columns). */
export class NodeEntry implements NodeFields {
  /** `name`: the slot's name when the caller has it as a string already (it is made from the bytes otherwise). */
  constructor(
    readonly table: NodeTable,
    readonly slot: number,
    private known?: string,
  ) {}
  get name(): string {
    return (this.known ??= this.table.nameOf(this.slot))
  }
  get auth(): 'enrolled' | 'legacy' {
    return this.table.isLegacy(this.slot) ? 'legacy' : 'enrolled'
  }
  get certSha256(): string | null {
    return this.table.certOf(this.slot)
  }
  set certSha256(cert: string | null) {
    this.table.setCert(this.slot, cert)
  }
  /** certSha256 !== null, without making its text. */
  get hasCert(): boolean {
    return this.table.certKind[this.slot] !== 0
  }
  get url(): string | null {
    return this.table.urls[this.slot] ?? null
  }
  set url(url: string | null) {
    this.table.urls[this.slot] = url || undefined
  }
  get tokenId(): string | null {
    return this.table.stringAt(this.table.tokenId[this.slot]!)
  }
  get generation(): number {
    return this.table.generation[this.slot]!
  }
  set generation(g: number) {
    this.table.generation[this.slot] = g
  }
  get previousValidUntil(): number {
    return this.table.previousValidUntil[this.slot]!
  }
  get version(): string | null {
    return this.table.stringAt(this.table.version[this.slot]!)
  }
  set version(v: string | null) {
    this.table.version[this.slot] = this.table.strings.indexOf(v, () => v!)
  }
  get enrolledAt(): number {
    return this.table.enrolledAt[this.slot]!
  }
  get lastSeenAt(): number | null {
    return orNull(this.table.lastSeenAt[this.slot]!)
  }
  set lastSeenAt(t: number | null) {
    this.table.lastSeenAt[this.slot] = num(t)
  }
  get cpuMillis(): number | null {
    return orNull(this.table.cpuMillis[this.slot]!)
  }
  set cpuMillis(x: number | null) {
    this.table.cpuMillis[this.slot] = num(x)
  }
  get memoryMB(): number | null {
    return orNull(this.table.memoryMB[this.slot]!)
  }
  set memoryMB(x: number | null) {
    this.table.memoryMB[this.slot] = num(x)
  }
  get replicas(): ReplicaStatus[] {
    return this.table.replicas[this.slot] ?? NO_REPLICAS
  }
  set replicas(r: ReplicaStatus[]) {
    this.table.replicas[this.slot] = r.length === 0 ? undefined : r
  }
  get drained(): boolean {
    return this.table.isDrained(this.slot)
  }
  set drained(d: boolean) {
    this.table.setDrained(this.slot, d)
  }
  get revokedAt(): number | null {
    return orNull(this.table.revokedAt[this.slot]!)
  }
  get labels(): Labels {
    return this.table.labelsOf(this.slot)
  }
  get probe(): Probe | undefined {
    return this.table.probeOf(this.slot)
  }
  set probe(p: Probe | undefined) {
    this.table.setProbe(this.slot, p)
  }
  /** The fields as plain data (a copy). */
  fields(): NodeFields {
    const probe = this.probe
    return {
      name: this.name,
      auth: this.auth,
      certSha256: this.certSha256,
      url: this.url,
      tokenId: this.tokenId,
      generation: this.generation,
      previousValidUntil: this.previousValidUntil,
      version: this.version,
      enrolledAt: this.enrolledAt,
      lastSeenAt: this.lastSeenAt,
      cpuMillis: this.cpuMillis,
      memoryMB: this.memoryMB,
      replicas: this.replicas,
      drained: this.drained,
      revokedAt: this.revokedAt,
      labels: this.labels,
      ...(probe ? { probe } : {}),
    }
  }
}

/** The registry's nodes as a map of views (NodeTable): a view is made for each node read. */
export class NodeViews {
  constructor(private readonly table: NodeTable) {}
  get size(): number {
    return this.table.size
  }
  has(name: string): boolean {
    return this.table.has(name)
  }
  get(name: string): NodeEntry | undefined {
    const s = this.table.slotOf(name)
    return s < 0 ? undefined : new NodeEntry(this.table, s, name)
  }
  keys(): IterableIterator<string> {
    return this.table.liveNames()
  }
  *values(): IterableIterator<NodeEntry> {
    for (const s of this.table.liveSlots()) yield new NodeEntry(this.table, s)
  }
}
