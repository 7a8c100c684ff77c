// A project and its row in the store. The env values, and the previous
// revision that carries them too, are sealed with the vault key, bound to the
// project's name and the column (docs/security.md): a reader of the store sees none.
import { labelsFromJson, labelsToJson, type Labels } from '../wire/labels.ts'
import type { ProjectRow } from '../store/projects.ts'
import type { FieldSeal } from '../context/vault.ts'
import type { PlacedProject, RollingPrevious } from './by-node.ts'

export interface Project extends PlacedProject {
  replicas: number
  origin: string
  nodeLabels: Labels
  deployedBy: string | null
  deployerRole: string | null
}

export const projectFromRow = (r: ProjectRow, fields: FieldSeal): Project => ({
  name: r.name,
  command: JSON.parse(r.command) as string[],
  env: JSON.parse(fields.open('projects', r.name, 'env', r.env)) as Record<string, string>,
  replicas: r.replicas,
  cpu: r.cpu,
  memory: r.memory,
  revision: r.revision,
  previous: r.previous ? (JSON.parse(fields.open('projects', r.name, 'previous', r.previous)) as RollingPrevious) : null,
  origin: r.origin,
  nodeLabels: labelsFromJson(r.node_labels),
  deployedBy: r.deployed_by,
  deployerRole: r.deployer_role,
})

export const projectToRow = (p: Project, fields: FieldSeal): Omit<ProjectRow, 'created_at' | 'updated_at'> => ({
  name: p.name,
  command: JSON.stringify(p.command),
  env: fields.seal('projects', p.name, 'env', JSON.stringify(p.env)),
  replicas: p.replicas,
  cpu: p.cpu,
  memory: p.memory,
  revision: p.revision,
  previous: p.previous ? fields.seal('projects', p.name, 'previous', JSON.stringify(p.previous)) : null,
  origin: p.origin,
  deployed_by: p.deployedBy,
  deployer_role: p.deployerRole,
  node_labels: labelsToJson(p.nodeLabels),
})
