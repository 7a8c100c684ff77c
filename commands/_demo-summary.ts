// What `muster demo` prints once its steps worked: where things run and what to try.
import type { DemoResult } from '../src/demo/demo.ts'
import type { HaDemoResult } from '../src/demo/demo-ha.ts'
import { esc, printLine } from './_out.ts'

/** `bin`: how to run this binary again from this shell (muster, or ./dist/muster). */
export function printDemo(r: DemoResult, bin: string): void {
  printLine()
  printLine(esc`muster is running in ${r.dir}`)
  printLine(esc`  dashboard and API:  ${r.apiUrl}  (log in as superadmin)`)
  printLine(esc`  enrollment:         ${r.enrollmentUrl}  (pin ${r.fingerprint})`)
  printLine(esc`  superadmin password: ${r.passwordFile}`)
  printLine(esc`  nodes: ${r.nodes.join(', ')}; project ${r.project} runs 2 replicas, one on each`)
  printLine()
  printLine('Try next (in another terminal):')
  printLine(esc`  export MUSTER_URL=${r.apiUrl}`)
  printLine(esc`  export MUSTER_TOKEN=$(${bin} admin api-token --data-dir ${r.platformDir})`)
  printLine(esc`  ${bin} nodes list`)
  printLine(esc`  ${bin} projects show ${r.project}`)
  printLine(esc`  ${bin} nodes drain worker-1        # its replica moves to worker-2`)
  printLine(esc`  ${bin} projects deploy web --replicas 3 -- sh -c "sleep 600"`)
  printLine(esc`  ${bin} nodes audit`)
}

export function printHaDemo(r: HaDemoResult, bin: string): void {
  const survivor = r.platforms.find((p) => p.name === r.survivor)!
  printLine()
  printLine(esc`muster is running in ${r.dir}, on a throwaway PostgreSQL (${r.database})`)
  for (const p of r.platforms) printLine(esc`  ${p.name}: API ${p.apiUrl}, enrollment ${p.enrollmentUrl}${p.name === r.killed ? '  (killed with kill -9)' : ''}`)
  printLine(esc`  ${r.survivor} ran every background loop ${r.takeoverSeconds}s after the kill; the nodes stayed ready and moved to it by themselves`)
  printLine(esc`  nodes: ${r.nodes.join(', ')}; projects ${r.projects.join(', ')} run`)
  printLine(esc`  superadmin password: ${r.passwordFile}`)
  printLine()
  printLine('Try next (in another terminal):')
  printLine(esc`  export MUSTER_URL=${survivor.apiUrl}`)
  printLine(esc`  export MUSTER_TOKEN=$(${bin} admin api-token --data-dir ${r.dir}/${r.survivor})`)
  printLine(esc`  ${bin} nodes platform              # the live Platforms and the loops each runs`)
  printLine(esc`  ${bin} nodes list`)
  printLine(esc`  ${bin} doctor --data-dir ${r.dir}/${r.nodes[0]}   # which Platform the Agent uses`)
}
