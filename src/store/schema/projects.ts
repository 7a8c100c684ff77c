import type { Migration } from '../migrations.ts'

export const PROJECTS_MIGRATIONS: Migration[] = []
