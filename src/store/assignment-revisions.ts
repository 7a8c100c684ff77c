// Every node's assignment revision at once (issue 16): the heartbeat answer
// carries it, so the Platform keeps them all in memory from the start.
import type { Db } from './db.ts'

export async function allAssignmentRevisions(db: Db): Promise<Map<string, number>> {
  const rows = await db.all<{ node: string; revision: number }>('SELECT node, revision FROM node_assignments')
  return new Map(rows.map((r) => [r.node, r.revision]))
}
