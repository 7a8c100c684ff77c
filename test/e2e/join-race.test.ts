// Root runs `muster worker join` into a data directory another account owns
// (`sudo muster worker join` where install.sh made /var/lib/muster the muster
// account's): that account races the join, performed through dist/muster. It
// holds the join on a FIFO where the key goes (the join first reads a key it
// may have) while it plants symlinks at the names the join's temporary files
// would take and, once
// the files are written, swaps each one with a symlink to a root-owned file
// outside (renameat2 RENAME_EXCHANGE in a loop, a race it seldom wins) while
// the join hands the files to the directory's owner; it makes worker/ a
// symlink to a root-owned folder; it leaves a hard link to a root-owned file.
// None may make root write or chown anything outside the directory: the
// victim keeps its content and owner, its folder gains nothing, and the join
// still hands what it wrote to the owner.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { chmodSync, chownSync, linkSync, lstatSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { runMuster, startServeWithListener } from '../helpers/binary.ts'
import { freePort } from '../helpers/node-side.ts'
import { describeAsRoot } from '../helpers/root.ts'
import { tmpDir, waitFor } from '../helpers/tmp.ts'

const FILES = ['agent.key', 'agent.crt', 'node-credential', 'trust.json', 'agent.json', 'platforms.json']
/** renameat2 on this architecture (x86_64, aarch64). */
const RENAMEAT2 = process.arch === 'arm64' ? 276 : 316

// The other account's racer: find the join, plant the temporary names it would use, then swap the files it wrote.
const RACER = `
use strict; use Time::HiRes qw(time); use POSIX qw(mkfifo); $| = 1;
my ($dir, $victim, $data, @files) = @ARGV;
mkfifo("$dir/agent.key", 0600) or die "mkfifo: $!";
print "ready\\n";
# Pids are handed out in order: watch the next ones (a full /proc scan each time would be too slow to be early).
my $pid; my $end = time + 60;
sub last_pid { open(my $l, "<", "/proc/sys/kernel/ns_last_pid") or die; my $n = <$l> + 0; close $l; $n }
my $start = last_pid();
while (!$pid) {
  my $last = last_pid();
  for my $e (($last - 300 > $start ? $last - 300 : $start) .. $last) {
    open(my $f, "<", "/proc/$e/cmdline") or next; local $/; my $c = <$f>; close $f;
    if (defined $c && index($c, "join\\0") >= 0 && index($c, "$data\\0") >= 0) { $pid = $e; last }
  }
  exit 2 if time > $end;
}
# The join names a temporary file FILE.tmp-PID-MILLISECONDS. It first reads the key it may already have, and
# worker/agent.key is a FIFO the account made: the join waits there while the names of the next second are
# planted, then goes on with whatever the account writes into it (not a key: it makes a new one at once).
my @aims = ('agent.key', 'agent.crt');
my $t = int(time * 1000) - 5;
my $planted = 0;
while ($t < int(time * 1000) + 1500) { for my $f (@aims) { symlink($victim, "$dir/$f.tmp-$pid-$t") and $planted++ } $t++ }
open(my $w, ">", "$dir/agent.key") or die "fifo: $!"; print $w "not a key\\n"; close $w;
print "planted $planted\\n";
while (-e "/proc/$pid" && !-e "$dir/agent.json") { }
# Then keep swapping each root-owned file with a symlink to the victim until the join ends.
for my $f (@files) { symlink($victim, "$dir/.s-$f") }
my $swaps = 0;
while (-e "/proc/$pid") {
  for my $f (@files) { syscall(${RENAMEAT2}, -100, "$dir/$f", -100, "$dir/.s-$f", 2) == 0 and $swaps++ }
}
print "swaps $swaps\\n";
`

const accounts: string[] = []
function useradd(name: string): number {
  const r = Bun.spawnSync(['useradd', '--system', '--user-group', '--no-create-home', '--shell', '/usr/sbin/nologin', name])
  if (r.exitCode !== 0) throw new Error(`useradd ${name}: ${r.stderr.toString()}`)
  accounts.push(name)
  return Number(Bun.spawnSync(['id', '-u', name]).stdout.toString().trim())
}

describeAsRoot('worker join as root into a directory another account owns', () => {
  let uid: number
  const tag = crypto.randomUUID().slice(0, 6)
  beforeAll(() => {
    uid = useradd(`mx-${tag}`)
  })
  afterAll(() => {
    for (const a of accounts) Bun.spawnSync(['userdel', a])
  })

  test('the owner races the join: planted temporary names, a folder swapped for a symlink, a hard link, swapped files; nothing outside is written or chowned', { timeout: 300_000 }, async () => {
    using dir = tmpDir()
    chmodSync(dir.path, 0o755)
    await using serve = await startServeWithListener(`${dir.path}/platform`, ['--no-local-node'])
    // What the account aims at: root-owned files and a folder it can neither write nor own.
    const etc = join(dir.path, 'etc')
    mkdirSync(etc, { mode: 0o755 })
    const victim = join(etc, 'victim')
    writeFileSync(victim, 'victim\n', { mode: 0o644 })
    const racer = join(dir.path, 'racer.pl')
    writeFileSync(racer, RACER, { mode: 0o644 })
    const untouched = () => {
      expect(readFileSync(victim, 'utf8')).toBe('victim\n')
      expect(statSync(victim)).toMatchObject({ uid: 0, gid: 0 })
      expect((statSync(victim).mode & 0o777).toString(8)).toBe('644')
      expect(readdirSync(etc)).toEqual(['victim'])
      expect(statSync(etc).uid).toBe(0)
    }
    let round = 0
    /** A data directory the account owns, prepared by `plant` (as the account would), then a root join into it. */
    const joinInto = async (plant: (data: string) => void, race = false) => {
      const node = `race-${++round}`
      const data = join(dir.path, node)
      mkdirSync(data, { mode: 0o700 })
      chownSync(data, uid, uid)
      plant(data)
      const r = race ? Bun.spawn(['setpriv', `--reuid=${uid}`, `--regid=${uid}`, '--clear-groups', 'perl', racer, join(data, 'worker'), victim, data, ...FILES], { stdout: 'pipe', stderr: 'pipe', cwd: '/' }) : undefined
      let said = ''
      const heard = r ? (async () => {
        for await (const c of r.stdout) said += new TextDecoder().decode(c)
      })() : undefined
      if (r) await waitFor(() => said.includes('ready') || r.exitCode !== null, { timeoutMs: 30_000, what: 'the racer ready' })
      const { token } = JSON.parse((await runMuster(['nodes', 'enroll-token', node, '--json'], { env: serve.env })).stdout) as { token: string }
      const joined = await runMuster(['worker', 'join', '--platform-url', serve.enrollUrl, '--node-id', node, '--platform-fingerprint', serve.fingerprint, '--address', '127.0.0.1', '--port', String(await freePort()), '--data-dir', data], { env: { MUSTER_ENROLLMENT_TOKEN: token }, timeoutMs: 60_000 })
      if (r) {
        const timer = setTimeout(() => r.kill('SIGKILL'), 30_000)
        const [err] = await Promise.all([new Response(r.stderr).text(), r.exited, heard])
        clearTimeout(timer)
        expect(err).toBe('')
        expect(said).toContain('planted') // the racer found the join in time
      }
      expect(joined.stderr).not.toMatch(/\n\s+at /) // no stack trace
      return { data, joined }
    }
    const asAccount = (data: string, f: (d: string) => void) => f(data)

    // 1. the temporary names the join's files would take are symlinks to the victim, planted while the join waits
    //    on a FIFO the account put where the key goes (and, once the files are there, each is swapped with such a
    //    symlink over and over while the join runs)
    for (let i = 0; i < 2; i++) {
      const { data, joined } = await joinInto((d) => {
        mkdirSync(join(d, 'worker'), { mode: 0o700 })
        chownSync(join(d, 'worker'), uid, uid)
      }, true)
      untouched()
      // the join itself went through (when no swap left a file as a symlink), and what it wrote is the owner's,
      // or still root's where a swap had the real file under another name while ownership was handed over
      // (skipped, never followed): nobody else's either way
      if (joined.code === 0 && !lstatSync(join(data, 'worker', 'agent.key')).isSymbolicLink()) expect([uid, 0]).toContain(statSync(join(data, 'worker', 'agent.key')).uid)
    }

    // 2. worker/ is a symlink to a root-owned folder elsewhere: the join refuses to write through it
    const viaLink = await joinInto((d) => asAccount(d, () => Bun.spawnSync(['setpriv', `--reuid=${uid}`, `--regid=${uid}`, '--clear-groups', 'ln', '-s', etc, join(d, 'worker')])))
    expect(viaLink.joined.code).not.toBe(0)
    expect(viaLink.joined.stderr).toContain('worker is not a folder (a symlink?); refusing to write through it')
    untouched()

    // 3. a root-owned file with a second link outside (what the account can make where fs.protected_hardlinks=0;
    //    root links it here in its place): the join hands the directory to its owner, but not that file
    const linked = await joinInto((d) => linkSync(victim, join(d, 'shadow')))
    expect(linked.joined.code).toBe(0)
    untouched()
    expect(statSync(join(linked.data, 'worker', 'agent.key')).uid).toBe(uid)
    expect(statSync(join(linked.data, 'worker')).uid).toBe(uid)
  })
})
