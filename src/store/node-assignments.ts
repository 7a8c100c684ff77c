// Each node's assignments as the placing Platform wrote them (revision, digest
// and the replicas), so every Platform on the store serves the same document.
import type { Db } from './db.ts'

export interface AssignmentRow {
  node: string
  revision: number
  digest: string
  replicas: string | null
}

/**
 * Stores a node's new replicas under the next revision, counted in the store
 * (so a Platform that just took over placement can never reuse a revision).
 */
export async function bumpNodeAssignment(db: Db, node: string, digest: string, replicas: string): Promise<number> {
  const row = await db.get<{ revision: number }>(
    `INSERT INTO node_assignments (node, revision, digest, replicas) VALUES (?1, 1, ?2, ?3)
     ON CONFLICT (node) DO UPDATE SET revision = node_assignments.revision + 1, digest = ?2, replicas = ?3
     RETURNING revision`,
    node, digest, replicas,
  )
  return row!.revision
}

export async function allNodeAssignments(db: Db): Promise<AssignmentRow[]> {
  return db.all<AssignmentRow>('SELECT node, revision, digest, replicas FROM node_assignments')
}
