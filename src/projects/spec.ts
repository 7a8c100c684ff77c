// What a project is, as operators and controllers send it: one schema for the
// projects route and for placements on an office.
import * as v from 'valibot'
import { NodeName } from '../wire/validate.ts'
import { LabelsSchema } from '../fabric/labels.ts'

export const ProjectSpec = v.object({
  name: NodeName,
  command: v.pipe(v.array(v.pipe(v.string(), v.maxLength(4096))), v.minLength(1, 'needs the program to run'), v.maxLength(256)),
  env: v.optional(v.record(v.pipe(v.string(), v.regex(/^[A-Za-z_][A-Za-z0-9_]{0,127}$/, 'expected an environment variable name')), v.pipe(v.string(), v.maxLength(8192)))),
  replicas: v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(10_000)),
  /** Millicores per replica (default 100). */
  cpu: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(1_000_000))),
  /** MB per replica (default 64). */
  memory: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(10_000_000))),
  /** Run only on nodes that carry every one of these labels (SPEC §16.11). */
  nodeLabels: v.optional(LabelsSchema),
})
export type ProjectSpec = v.InferOutput<typeof ProjectSpec>
