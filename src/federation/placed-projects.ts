// Projects the controller placed on this office: their shape, and the seam
// through which they run on the office's own nodes. By default they become
// ordinary projects of this Platform's workloads service (origin 'controller'),
// so they are placed, signed and supervised like any other, and keep running
// with the controller gone. Tests (or another runtime) can register a runner.
import { ProjectSpec } from '../wire/projects.ts'
import { MusterError } from '../errors.ts'
import type { Projects } from '../projects/service.ts'
import type { OfficeProjectStatus as PlacedProjectStatus } from '../wire/federation.ts'

// A placed project is a project spec like any other.
export const PlacedProjectSpec = ProjectSpec
export type PlacedProjectSpec = ProjectSpec

/** Runs what the controller placed. `apply` is called once per placement; the runner keeps what it runs across restarts. */
export interface PlacedProjectRunner {
  apply(spec: PlacedProjectSpec): void | Promise<void>
  status(spec: PlacedProjectSpec): PlacedProjectStatus
}

export const PLACED_ORIGIN = 'controller'

/** Runs placed projects as this Platform's own projects; a local project of the same name is never overwritten. */
export function workloadsRunner(projects: Projects): PlacedProjectRunner {
  return {
    async apply(spec) {
      if (projects.has(spec.name) && projects.show(spec.name).origin !== PLACED_ORIGIN) {
        throw new MusterError('conflict', `This office already runs its own project named ${spec.name}; the controller cannot replace it.`)
      }
      await projects.deploy({ ...spec, origin: PLACED_ORIGIN })
    },
    status(spec) {
      if (!projects.has(spec.name)) return { name: spec.name, replicas: spec.replicas, state: 'pending', running: 0, detail: 'not deployed on this office' }
      const view = projects.show(spec.name)
      const running = view.placements.filter((p) => p.state === 'running').length
      const state = view.replicas === 0 ? 'stopped' : running >= view.replicas ? 'running' : view.placements.some((p) => p.state === 'failed') ? 'failed' : 'pending'
      const detail = view.shortfall > 0 ? `${view.shortfall} replica(s) do not fit (${view.reason})` : view.reason === 'no-eligible-node' ? 'no node is eligible' : undefined
      return { name: spec.name, replicas: view.replicas, state, running, ...(detail ? { detail } : {}) }
    },
  }
}

/** Replaces what runs placed projects on an office (tests). */
export function registerPlacedProjectRunner(p: { federation: { placedRunner: PlacedProjectRunner } }, runner: PlacedProjectRunner): void {
  p.federation.placedRunner = runner
}
