// The Platform's certificate authority at run time: the current CA (and a
// prepared replacement), re-read from the vault so that `muster admin ca …`
// and other Platforms sharing the vault are seen without a restart.
import { log } from '../log.ts'
import type { Vault } from '../context/vault.ts'
import { loadOrCreateCa, readCa, type PlatformCa } from './platform-ca.ts'

export class Pki {
  private constructor(
    private readonly vault: Vault,
    public ca: PlatformCa,
    /** A replacement made on purpose, published to nodes before it is used. */
    public next: PlatformCa | null,
  ) {}

  static async open(vault: Vault, now: number): Promise<Pki> {
    const ca = await loadOrCreateCa(vault, now)
    return new Pki(vault, ca, await readCa(vault, 'next'))
  }

  /** Every CA pin a node should accept now: the current CA's, then a prepared replacement's. */
  caPins(): string[] {
    return this.next ? [this.ca.pin, this.next.pin] : [this.ca.pin]
  }

  /** Re-reads the vault; true when the current CA changed (its server certificates must be re-issued). */
  async reload(): Promise<boolean> {
    const ca = await readCa(this.vault)
    const next = await readCa(this.vault, 'next')
    this.next = next
    if (!ca || ca.pin === this.ca.pin) return false
    log.warn(`the Platform CA changed to ${ca.pin} (was ${this.ca.pin}); server certificates are issued again`)
    this.ca = ca
    return true
  }
}
