// What `muster serve` checks before it creates anything (docs/operations.md): the
// configuration holds together, the data directory can be written, the API and
// enrollment ports are free, and the files the flags name are usable. A refusal
// is one line; the CA, the keys, the superadmin account and its password file
// are made only after every check passed.
import { accessSync, constants, existsSync, statSync } from 'node:fs'
import { dirname, resolve } from 'node:path'
import { DataDir } from '../datadir.ts'
import { MusterError } from '../errors.ts'
import { listenerPlan, refuseUnreachableApi } from '../listener/plan.ts'
import type { PlatformOptions } from '../context/options.ts'
import { refuseInsecureNodeTraffic } from './platform.ts'
import { serveLockHolder } from '../serve-lock.ts'
import { preflight as checkFiles } from './serve.ts'
import { assertPortFree } from '../sockets/ports.ts'

/** `command`: how serve was started, for the command line a refusal suggests. */
export async function preflightServe(o: PlatformOptions, command: string[]): Promise<void> {
  refuseInsecureNodeTraffic(o)
  refuseUnreachableApi(o, command)
  checkDataDirWritable(o.dataDir)
  // Another serve on this data directory: the lock's own refusal names its pid (not "port in use").
  if (existsSync(o.dataDir) && serveLockHolder(new DataDir(o.dataDir)) !== null) return
  await checkPort(o.host ?? '127.0.0.1', o.port ?? 7380, '--port')
  if (o.enrollmentPort !== undefined) for (const host of listenerPlan(o).binds) await checkPort(host, o.enrollmentPort, '--enrollment-port')
  checkFiles(o)
  // The identity provider: the settings, the secret's file, and discovery answer.
  if (o.oidc) await (await import('../sso/start.ts')).checkOidc(o.oidc)
}

/** The data directory, or the nearest folder above it that exists (serve creates the rest), is writable by this user. */
export function checkDataDirWritable(path: string): void {
  const wanted = resolve(path)
  let at = wanted
  while (!existsSync(at) && dirname(at) !== at) at = dirname(at)
  if (!statSync(at).isDirectory()) throw new MusterError('not-configured', `Cannot use the data directory ${wanted}: ${at} is not a directory. Give --data-dir a directory.`)
  try {
    accessSync(at, constants.W_OK | constants.X_OK)
  } catch (e) {
    const why = (e as NodeJS.ErrnoException).code === 'EROFS' ? 'is on a read-only file system' : `is not writable by this user (uid ${process.getuid?.()})`
    const what = at === wanted ? at : `${at} (where ${wanted} would be created)`
    throw new MusterError('not-configured', `Cannot write the data directory: ${what} ${why}. Run serve as the user that owns it (sudo -u muster muster serve …), or give --data-dir a directory you can write.`)
  }
}

async function checkPort(host: string, port: number, flag: string): Promise<void> {
  let free: boolean
  try {
    free = await assertPortFree(host, port)
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code
    if (code === 'EADDRNOTAVAIL') throw new MusterError('not-configured', `Cannot listen on ${host}: no interface of this machine has that address (ip -brief address lists them).`)
    if (code === 'EACCES') throw new MusterError('not-configured', `Cannot listen on port ${port} of ${host}: ports below 1024 need privileges; choose ${flag} 1024 or higher.`)
    throw new MusterError('not-configured', `Cannot listen on port ${port} of ${host}: ${(e as Error).message}`)
  }
  if (!free) throw new MusterError('already-running', `Port ${port} on ${host} is already in use (another muster serve? \`ss -ltnp 'sport = :${port}'\` shows the program): stop it, or choose another ${flag}.`)
}
