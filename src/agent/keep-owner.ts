// `sudo muster worker join` on a machine install.sh set up: the data
// directory belongs to the muster account, and the Agent (its unit runs as
// that account) must be able to read what the join wrote there. Run as root,
// the join hands every root-owned entry under it to the directory's owner.
import { chownSync, lstatSync, readdirSync } from 'node:fs'
import { join } from 'node:path'

/** Gives root-owned entries under `root` to `root`'s owner, when run as root and that owner is another account. */
export function keepOwner(root: string): number {
  if (process.getuid?.() !== 0) return 0
  const owner = lstatSync(root)
  if (owner.uid === 0) return 0
  let changed = 0
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const p = join(dir, name)
      const st = lstatSync(p)
      if (st.isSymbolicLink()) continue
      if (st.uid === 0) {
        chownSync(p, owner.uid, owner.gid)
        changed++
      }
      if (st.isDirectory()) walk(p)
    }
  }
  walk(root)
  return changed
}
