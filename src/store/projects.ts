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
  created_at: number
  updated_at: number
}

export function allProjects(db: Db): ProjectRow[] {
  return db.query<ProjectRow, []>('SELECT * FROM projects ORDER BY name').all()
}

export function upsertProject(db: Db, p: Omit<ProjectRow, 'created_at' | 'updated_at'>, now: number): void {
  db.query(
    `INSERT INTO projects (name, command, env, replicas, cpu, memory, revision, previous, origin, created_at, updated_at)
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?10)
     ON CONFLICT(name) DO UPDATE SET command = ?2, env = ?3, replicas = ?4, cpu = ?5, memory = ?6, revision = ?7, previous = ?8, origin = ?9, updated_at = ?10`,
  ).run(p.name, p.command, p.env, p.replicas, p.cpu, p.memory, p.revision, p.previous, p.origin, now)
}

export function setPrevious(db: Db, name: string, previous: string | null): void {
  db.query('UPDATE projects SET previous = ?2 WHERE name = ?1').run(name, previous)
}

export function deleteProject(db: Db, name: string): boolean {
  return db.transaction(() => {
    db.query('DELETE FROM placements WHERE project = ?1').run(name)
    return db.query('DELETE FROM projects WHERE name = ?1').run(name).changes === 1
  })()
}

export function allPlacements(db: Db): { project: string; replica: number; node: string | null }[] {
  return db.query<{ project: string; replica: number; node: string | null }, []>('SELECT project, replica, node FROM placements').all()
}

export function replacePlacements(db: Db, rows: { project: string; replica: number; node: string | null }[]): void {
  const ins = db.query('INSERT INTO placements (project, replica, node) VALUES (?1, ?2, ?3)')
  db.transaction(() => {
    db.query('DELETE FROM placements').run()
    for (const r of rows) ins.run(r.project, r.replica, r.node)
  })()
}

export function nodeAssignment(db: Db, node: string): { revision: number; digest: string } | null {
  return db.query<{ revision: number; digest: string }, [string]>('SELECT revision, digest FROM node_assignments WHERE node = ?1').get(node)
}

export function saveNodeAssignment(db: Db, node: string, revision: number, digest: string): void {
  db.query('INSERT INTO node_assignments (node, revision, digest) VALUES (?1, ?2, ?3) ON CONFLICT(node) DO UPDATE SET revision = ?2, digest = ?3').run(node, revision, digest)
}
