// `sudo muster worker join` on a machine install.sh set up: the data
// directory belongs to the muster account, and the Agent (its unit runs as
// that account) must be able to read what the join wrote there. Run as root,
// the join hands every root-owned entry under it to the directory's owner.
//
// That owner can change the directory while root works in it, so nothing here
// follows a name twice: each entry is opened once without following a symlink
// (O_NOFOLLOW, through its folder's open descriptor), checked with fstat on
// that descriptor and given away with fchown on it. A symlink swapped in is
// skipped; a file swapped in after the open is not the one chowned; a file with
// another hard link (one that may live outside) is left alone.
import { closeSync, constants, fchownSync, fstatSync, openSync, readdirSync } from 'node:fs'
import { openDirNoFollow } from '../datadir.ts'

const ENTRY = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK | constants.O_NOCTTY

/** Gives root-owned entries under `root` to `root`'s owner, when run as root and that owner is another account. */
export function keepOwner(root: string): number {
  if (process.getuid?.() !== 0) return 0
  const top = openDirNoFollow(root, '')
  if (top === undefined) return 0
  let changed = 0
  const walk = (dirFd: number, owner: { uid: number; gid: number }) => {
    for (const name of readdirSync(`/proc/self/fd/${dirFd}`)) {
      let fd: number
      try {
        fd = openSync(`/proc/self/fd/${dirFd}/${name}`, ENTRY)
      } catch {
        continue // a symlink (ELOOP), or gone
      }
      try {
        const st = fstatSync(fd)
        const dir = st.isDirectory()
        if (!dir && !(st.isFile() && st.nlink === 1)) continue
        if (st.uid === 0) {
          fchownSync(fd, owner.uid, owner.gid)
          changed++
        }
        if (dir) walk(fd, owner)
      } finally {
        closeSync(fd)
      }
    }
  }
  try {
    const owner = fstatSync(top)
    if (owner.uid !== 0) walk(top, { uid: owner.uid, gid: owner.gid })
  } finally {
    closeSync(top)
  }
  return changed
}
