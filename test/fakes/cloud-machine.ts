// A fake cloud machine that boots from its real first-boot data, for real, as
// root, in a network namespace of its own: its metadata service at the real
// address (169.254.169.254 on its loopback; metadata.google.internal through
// /etc/netns/NS/hosts), the Platform reached at the URLs its first-boot data
// names (test/fakes/ns-forward.ts), and cloud-init's part played here: the
// files of write_files written with their modes, then runcmd's join.sh run by
// sh in a mount namespace where /etc, /usr/local, /var/lib, /root and /run are
// the machine's own directories (install.sh creates the muster account and
// installs the binary there, never on this machine), with a systemctl that
// starts the unit install.sh wrote. Nothing here touches this machine's /etc
// or /var/lib.
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { readFirstBoot } from './first-boot.ts'
import type { MetadataConfig } from './metadata.ts'
import { relayTcpToUnix, relayUnixToTcp } from './ns-forward.ts'
import { AGENT_PORT } from '../../src/cloud/provider.ts'
import { startOn, type Host, type Started } from '../helpers/netns.ts'

const REPO = join(import.meta.dir, '..', '..')

export interface CloudMachine {
  host: Host
  /** join.sh's run to its end: exit code and output. */
  booted: Promise<{ code: number; out: string }>
  /** join.sh's and the Agent's output so far. */
  log(): string
  stop(): Promise<void>
}

export interface BootOptions {
  userData: string
  metadata: MetadataConfig
  /** The Platform's ports on 127.0.0.1 the machine reaches (the enrollment listener, the API). */
  platformPorts: number[]
  /** A short directory (Unix socket paths are limited to 107 bytes). */
  dir: string
  /** The Agent's environment (a short heartbeat interval for tests). */
  agentEnv?: Record<string, string>
  /** How many times join.sh tries the join (default 2: refusals are tried again 15 s later). */
  joinTries?: number
  /**
   * Where the Platform reaches the machine's Agent (cloud provision --probe): its metadata service
   * gives this address as the public one, and HOST:7381 on this machine relays to the Agent.
   */
  publicAddress?: string
}

const SYSTEMCTL = `#!/bin/sh
# systemd's part on a fake machine: "enable --now" of the Agent's unit starts what its ExecStart
# says as its User=; anything else (disabling sshd, daemon-reload) has nothing to act on here.
case "$*" in
*"enable --now muster-agent.service"*)
	unit=/etc/systemd/system/muster-agent.service
	user=$(sed -n 's/^User=//p' "$unit")
	cmd=$(sed -n 's/^ExecStart=//p' "$unit")
	# shellcheck disable=SC2086
	setsid runuser -u "$user" -- env $MUSTER_FAKE_AGENT_ENV $cmd >>"$MUSTER_FAKE_AGENT_LOG" 2>&1 </dev/null &
	;;
esac
exit 0
`

const BOOT = `#!/bin/sh
# In a mount namespace of its own: the machine's directories over this machine's, then runcmd.
set -eu
D=$1
cp -a /etc/. "$D/etc/"
for d in etc usr-local var-lib root run; do
	case $d in usr-local) at=/usr/local ;; var-lib) at=/var/lib ;; *) at=/$d ;; esac
	mount --bind "$D/$d" "$at"
done
export PATH="$D/shims:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" HOME=/root
cd /
exec sh /root/muster-first-boot/join.sh
`

export async function bootCloudMachine(host: Host, o: BootOptions): Promise<CloudMachine> {
  const disk = join(o.dir, 'disk')
  for (const d of ['etc', 'usr-local', 'var-lib', 'root', 'run', 'shims']) mkdirSync(join(disk, d), { recursive: true })
  // the metadata service where the real one answers
  Bun.spawnSync(['ip', '-n', host.ns, 'addr', 'add', '169.254.169.254/32', 'dev', 'lo'])
  mkdirSync(`/etc/netns/${host.ns}`, { recursive: true })
  writeFileSync(`/etc/netns/${host.ns}/hosts`, '127.0.0.1 localhost\n::1 localhost\n169.254.169.254 metadata.google.internal metadata\n')
  const cfg = join(o.dir, 'metadata.json')
  writeFileSync(cfg, JSON.stringify({ ...o.metadata, ...(o.publicAddress ? { publicIp: o.publicAddress } : {}) }))
  const started: Started[] = []
  const metadata = startOn(host, ['bun', join(REPO, 'test/fakes/metadata.ts'), cfg])
  started.push(metadata)
  await metadata.waitForLog(/metadata service for/, 30_000)
  // the Platform at 127.0.0.1:PORT, as on the machine's own loopback
  const relays: { stop(closeActive?: boolean): void }[] = o.platformPorts.map((port) => relayUnixToTcp(join(o.dir, `p${port}.sock`), port))
  const agentSock = join(o.dir, 'agent.sock')
  // the Agent listens on the loopback there (a loopback address given binds 127.0.0.1)
  const reverse = o.publicAddress ? [`unix:${agentSock}=127.0.0.1:${AGENT_PORT}`] : []
  const forward = startOn(host, ['bun', join(REPO, 'test/fakes/ns-forward.ts'), ...o.platformPorts.map((port) => `127.0.0.1:${port}=${join(o.dir, `p${port}.sock`)}`), ...reverse])
  started.push(forward)
  await forward.waitForLog(/relaying/, 30_000)
  if (o.publicAddress) relays.push(relayTcpToUnix(o.publicAddress, AGENT_PORT, agentSock))
  // cloud-init: write_files, with their modes
  const boot = readFirstBoot(o.userData)
  for (const f of boot.files.values()) {
    const at = join(disk, f.path.replace(/^\/root\//, 'root/'))
    mkdirSync(join(at, '..'), { recursive: true })
    writeFileSync(at, f.content)
    chmodSync(at, Number.parseInt(f.permissions, 8))
  }
  writeFileSync(join(disk, 'shims', 'systemctl'), SYSTEMCTL, { mode: 0o755 })
  writeFileSync(join(o.dir, 'boot.sh'), BOOT, { mode: 0o755 })
  const agentLog = join(o.dir, 'agent.log')
  writeFileSync(agentLog, '')
  // runcmd
  const env = {
    PATH: '/usr/sbin:/usr/bin:/sbin:/bin',
    NO_COLOR: '1',
    MUSTER_JOIN_TRIES: String(o.joinTries ?? 2),
    MUSTER_FAKE_AGENT_LOG: agentLog,
    // The test run's marker too (test/helpers/leftovers.ts): the Agent and its replicas are found if a test leaves them.
    MUSTER_FAKE_AGENT_ENV: Object.entries({ NO_COLOR: '1', ...(process.env.MUSTER_TEST_RUN ? { MUSTER_TEST_RUN: process.env.MUSTER_TEST_RUN } : {}), ...o.agentEnv }).map(([k, v]) => `${k}=${v}`).join(' '),
  }
  const run = Bun.spawn(host.argv(['unshare', '--mount', '--propagation', 'private', 'sh', join(o.dir, 'boot.sh'), disk]), { env, stdin: 'ignore', stdout: 'pipe', stderr: 'pipe' })
  let out = ''
  const pump = async (s: ReadableStream<Uint8Array>) => {
    for await (const c of s) out += new TextDecoder().decode(c)
  }
  const booted = Promise.all([pump(run.stdout), pump(run.stderr), run.exited]).then(([, , code]) => ({ code, out }))
  return {
    host,
    booted,
    log: () => `${out}\n--- agent ---\n${readFileSync(agentLog, 'utf8')}`,
    async stop() {
      run.kill('SIGKILL')
      for (const s of started) await s.stop()
      for (const r of relays) r.stop(true)
    },
  }
}
