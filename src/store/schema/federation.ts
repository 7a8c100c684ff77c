import type { Migration } from '../migrations.ts'

export const FEDERATION_MIGRATIONS: Migration[] = []
