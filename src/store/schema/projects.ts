import type { Migration } from './migration.ts'

export const PROJECTS_MIGRATIONS: Migration[] = [
  {
    id: 200,
    name: 'projects, placements, per-node assignment revisions',
    sql: `
      CREATE TABLE projects (
        name TEXT PRIMARY KEY,
        command TEXT NOT NULL,
        env TEXT NOT NULL,
        replicas INTEGER NOT NULL,
        cpu INTEGER NOT NULL,
        memory INTEGER NOT NULL,
        revision INTEGER NOT NULL,
        previous TEXT,
        origin TEXT NOT NULL DEFAULT 'local',
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL
      );
      CREATE TABLE placements (
        project TEXT NOT NULL,
        replica INTEGER NOT NULL,
        node TEXT,
        PRIMARY KEY (project, replica)
      );
      CREATE INDEX placements_node ON placements (node);
      CREATE TABLE node_assignments (
        node TEXT PRIMARY KEY,
        revision INTEGER NOT NULL,
        digest TEXT NOT NULL
      );
    `,
  },
  {
    id: 210,
    name: 'projects: who deployed them (the local node takes only a superadmin\'s) and the node labels they ask for',
    sql: `
      ALTER TABLE projects ADD COLUMN deployed_by TEXT;
      ALTER TABLE projects ADD COLUMN deployer_role TEXT;
      ALTER TABLE projects ADD COLUMN node_labels TEXT;
    `,
  },
]
