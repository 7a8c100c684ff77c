// The projects, placements and node_assignments tables.
import type { Db } from './db.ts'

export interface ProjectRow {
  name: string
  command: string
  env: string
  replicas: number
  cpu: number
  memory: number
  revision: number
  previous: string | null
  origin: string
  /** Who deployed it last (account or token name), and with which role. */
  deployed_by: string | null
  deployer_role: string | null
  /** Labels a node must carry to run it, a JSON object (null: none). */
  node_labels: string | null
  created_at: number
  updated_at: number
}

export async function allProjects(db: Db): Promise<ProjectRow[]> {
  return await db.all<ProjectRow>('SELECT * FROM projects ORDER BY name')
}

export async function upsertProject(db: Db, p: Omit<ProjectRow, 'created_at' | 'updated_at'>, now: number): Promise<void> {
  await db.run(`INSERT INTO projects (name, command, env, replicas, cpu, memory, revision, previous, origin, created_at, updated_at, deployed_by, deployer_role, node_labels)
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?10, ?11, ?12, ?13)
     ON CONFLICT(name) DO UPDATE SET command = ?2, env = ?3, replicas = ?4, cpu = ?5, memory = ?6, revision = ?7, previous = ?8, origin = ?9, updated_at = ?10,
       deployed_by = ?11, deployer_role = ?12, node_labels = ?13`, p.name, p.command, p.env, p.replicas, p.cpu, p.memory, p.revision, p.previous, p.origin, now, p.deployed_by, p.deployer_role, p.node_labels)
}

export async function setPrevious(db: Db, name: string, previous: string | null): Promise<void> {
  await db.run('UPDATE projects SET previous = ?2 WHERE name = ?1', name, previous)
}

export async function deleteProject(db: Db, name: string): Promise<boolean> {
  return db.tx(async (t) => {
    await t.run('DELETE FROM placements WHERE project = ?1', name)
    return (await t.run('DELETE FROM projects WHERE name = ?1', name)) === 1
  })
}

export async function allPlacements(db: Db): Promise<{ project: string; replica: number; node: string | null }[]> {
  return await db.all<{ project: string; replica: number; node: string | null }>('SELECT project, replica, node FROM placements')
}

export async function replacePlacements(db: Db, rows: { project: string; replica: number; node: string | null }[]): Promise<void> {
  await db.tx(async (t) => {
    await t.run('DELETE FROM placements')
    // Many rows per statement: a large fleet's placements are written in a few round trips.
    for (let i = 0; i < rows.length; i += 300) {
      const chunk = rows.slice(i, i + 300)
      const values = chunk.map((_, j) => `(?${j * 3 + 1}, ?${j * 3 + 2}, ?${j * 3 + 3})`).join(', ')
      await t.run(`INSERT INTO placements (project, replica, node) VALUES ${values}`, ...chunk.flatMap((r) => [r.project, r.replica, r.node]))
    }
  })
}

export async function nodeAssignment(db: Db, node: string): Promise<{ revision: number; digest: string } | null> {
  return await db.get<{ revision: number; digest: string }>('SELECT revision, digest FROM node_assignments WHERE node = ?1', node)
}

export async function saveNodeAssignment(db: Db, node: string, revision: number, digest: string): Promise<void> {
  await db.run('INSERT INTO node_assignments (node, revision, digest) VALUES (?1, ?2, ?3) ON CONFLICT(node) DO UPDATE SET revision = ?2, digest = ?3', node, revision, digest)
}
