// Projects the controller placed on this office: their shape, and the seam
// through which the workloads area runs them on the office's own nodes.
//
// TODO(workloads): the office stores every placed project (office_placed_projects)
// and reports it in heartbeats, but running it is the workloads area's job.
// When src/projects/ exists, its service calls
//   registerPlacedProjectRunner(platform, { apply, status })
// at start: `apply` is called for each stored project at start and on every
// new placement (replace the running spec; never throw for lack of capacity,
// report it in `status`), and `status` feeds each heartbeat. Until then every
// placed project reports state 'pending'.
import * as v from 'valibot'
import type { Platform } from '../platform.ts'
import { OFFICE_ID } from './formats.ts'

export const PlacedProjectSpec = v.object({
  name: v.pipe(v.string(), v.regex(OFFICE_ID, 'expected a project name like web-1 (lowercase letters, digits, dashes)')),
  command: v.pipe(v.array(v.pipe(v.string(), v.maxLength(4096))), v.minLength(1, 'expected a command'), v.maxLength(256)),
  env: v.optional(v.record(v.pipe(v.string(), v.regex(/^[A-Za-z_][A-Za-z0-9_]{0,127}$/, 'expected an environment variable name')), v.pipe(v.string(), v.maxLength(8192))), {}),
  replicas: v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(1000)),
  cpu: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(1_000_000)), 100),
  memory: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(16_777_216)), 128),
})
export type PlacedProjectSpec = v.InferOutput<typeof PlacedProjectSpec>

export interface PlacedProjectStatus {
  name: string
  replicas: number
  state: 'pending' | 'running' | 'failed' | 'stopped'
  /** Replicas running now. */
  running: number
  detail?: string
}

export interface PlacedProjectRunner {
  apply(spec: PlacedProjectSpec): void | Promise<void>
  status(spec: PlacedProjectSpec): PlacedProjectStatus
}

/** Until the workloads area registers a runner, nothing runs and it says so. */
const notYet: PlacedProjectRunner = {
  apply() {},
  status: (spec) => ({ name: spec.name, replicas: spec.replicas, state: 'pending', running: 0, detail: 'workloads are not available on this Platform yet' }),
}

const runners = new WeakMap<Platform, PlacedProjectRunner>()

export function registerPlacedProjectRunner(platform: Platform, runner: PlacedProjectRunner): void {
  runners.set(platform, runner)
}

export function placedProjectRunner(platform: Platform): PlacedProjectRunner {
  return runners.get(platform) ?? notYet
}
