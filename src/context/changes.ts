// Change notices between the Platforms that share a store (docs/storage-ha.md): a
// revoke, rotate, drain, deploy or token revoke made on one Platform reaches
// every other within a second, through the store's notification channel
// (PostgreSQL LISTEN/NOTIFY; in-process on SQLite). Subscribers drop or reload
// what they cache. A notice carries the topic and a short key, never a secret.
import { randomId } from '../crypto/tokens.ts'
import { log } from '../log.ts'
import type { Store } from '../store/db.ts'

export type Topic = 'node' | 'nodes' | 'project' | 'join-token' | 'api-token' | 'session' | 'account' | 'trust-keys' | 'secrets' | 'platforms' | 'federation' | 'cloud' | 'assignments' | 'probes' | 'logs' | 'releases' | 'rollouts'

const CHANNEL = 'muster_changes'

type Listener = (key: string, local: boolean) => void

export class Changes {
  /** This Platform's id: its own notices come back from PostgreSQL and are not delivered twice. */
  readonly origin = randomId(12)
  private readonly listeners = new Map<Topic, Set<Listener>>()
  private unlisten: (() => Promise<void>) | undefined

  constructor(private readonly store: Store) {}

  async start(): Promise<void> {
    this.unlisten = await this.store.listen(CHANNEL, (payload) => this.receive(payload))
  }

  async stop(): Promise<void> {
    await this.unlisten?.().catch(() => {})
    this.unlisten = undefined
  }

  on(topic: Topic, fn: Listener): void {
    const set = this.listeners.get(topic) ?? new Set()
    set.add(fn)
    this.listeners.set(topic, set)
  }

  /** Tells this Platform at once and the others through the store; never throws. */
  async publish(topic: Topic, key = ''): Promise<void> {
    this.deliver(topic, key, true)
    if (this.store.engine !== 'postgres') return
    try {
      await this.store.notify(CHANNEL, JSON.stringify({ o: this.origin, t: topic, k: key }))
    } catch (e) {
      log.warn(`could not tell the other Platforms about a ${topic} change: ${(e as Error).message}`)
    }
  }

  private receive(payload: string): void {
    let msg: { o?: unknown; t?: unknown; k?: unknown }
    try {
      msg = JSON.parse(payload) as typeof msg
    } catch {
      return
    }
    if (msg.o === this.origin || typeof msg.t !== 'string' || typeof msg.k !== 'string') return
    this.deliver(msg.t as Topic, msg.k, false)
  }

  private deliver(topic: Topic, key: string, local: boolean): void {
    for (const fn of this.listeners.get(topic) ?? []) {
      try {
        fn(key, local)
      } catch (e) {
        log.warn(`change listener for ${topic}: ${(e as Error).message}`)
      }
    }
  }
}
