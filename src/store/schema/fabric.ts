import type { Migration } from '../migrations.ts'

export const FABRIC_MIGRATIONS: Migration[] = []
