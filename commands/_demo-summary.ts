// What `muster demo` prints once its steps worked: where things run and what to try.
import type { DemoResult } from '../src/demo/demo.ts'
import type { HaDemoResult } from '../src/demo/demo-ha.ts'
import { printLine } from './_out.ts'

/** `bin`: how to run this binary again from this shell (muster, or ./dist/muster). */
export function printDemo(r: DemoResult, bin: string): void {
  printLine()
  printLine(`muster is running in ${r.dir}`)
  printLine(`  dashboard and API:  ${r.apiUrl}  (log in as superadmin)`)
  printLine(`  enrollment:         ${r.enrollmentUrl}  (pin ${r.fingerprint})`)
  printLine(`  superadmin password: ${r.passwordFile}`)
  printLine(`  nodes: ${r.nodes.join(', ')}; project ${r.project} runs 2 replicas, one on each`)
  printLine()
  printLine('Try next (in another terminal):')
  printLine(`  export MUSTER_URL=${r.apiUrl}`)
  printLine(`  export MUSTER_TOKEN=$(${bin} admin api-token --data-dir ${r.platformDir})`)
  printLine(`  ${bin} nodes list`)
  printLine(`  ${bin} projects show ${r.project}`)
  printLine(`  ${bin} nodes drain worker-1        # its replica moves to worker-2`)
  printLine(`  ${bin} projects deploy web --replicas 3 -- sh -c "sleep 600"`)
  printLine(`  ${bin} nodes audit`)
}

export function printHaDemo(r: HaDemoResult, bin: string): void {
  const survivor = r.platforms.find((p) => p.name === r.survivor)!
  printLine()
  printLine(`muster is running in ${r.dir}, on a throwaway PostgreSQL (${r.database})`)
  for (const p of r.platforms) printLine(`  ${p.name}: API ${p.apiUrl}, enrollment ${p.enrollmentUrl}${p.name === r.killed ? '  (killed with kill -9)' : ''}`)
  printLine(`  ${r.survivor} ran every background loop ${r.takeoverSeconds}s after the kill; the nodes stayed ready and moved to it by themselves`)
  printLine(`  nodes: ${r.nodes.join(', ')}; projects ${r.projects.join(', ')} run`)
  printLine(`  superadmin password: ${r.passwordFile}`)
  printLine()
  printLine('Try next (in another terminal):')
  printLine(`  export MUSTER_URL=${survivor.apiUrl}`)
  printLine(`  export MUSTER_TOKEN=$(${bin} admin api-token --data-dir ${r.dir}/${r.survivor})`)
  printLine(`  ${bin} nodes platform              # the live Platforms and the loops each runs`)
  printLine(`  ${bin} nodes list`)
  printLine(`  ${bin} doctor --data-dir ${r.dir}/${r.nodes[0]}   # which Platform the Agent uses`)
}
