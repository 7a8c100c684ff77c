// Every schema change, numbered. Each area owns a range so work on different
// areas never collides: auth 1–99, fabric 100–199, projects 200–299,
// federation 300–399, cloud 400–499, the Platform's own 500–599, releases and rollouts 600–649. Append; never edit an applied migration.
import { AUTH_MIGRATIONS } from './schema/auth.ts'
import { FABRIC_MIGRATIONS } from './schema/fabric.ts'
import { PROJECTS_MIGRATIONS } from './schema/projects.ts'
import { FEDERATION_MIGRATIONS } from './schema/federation.ts'
import { CLOUD_MIGRATIONS } from './schema/cloud.ts'
import { PLATFORM_MIGRATIONS } from './schema/platform.ts'
import { LOGS_MIGRATIONS } from './schema/logs.ts'
import { RELEASES_MIGRATIONS } from './schema/releases.ts'
import type { Migration } from './schema/migration.ts'

export type { Migration } from './schema/migration.ts'

export const MIGRATIONS: readonly Migration[] = [...AUTH_MIGRATIONS, ...FABRIC_MIGRATIONS, ...PROJECTS_MIGRATIONS, ...LOGS_MIGRATIONS, ...FEDERATION_MIGRATIONS, ...CLOUD_MIGRATIONS, ...PLATFORM_MIGRATIONS, ...RELEASES_MIGRATIONS]
