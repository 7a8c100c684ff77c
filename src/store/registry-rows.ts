// The node registry's load at start: every node but without its
// certificate PEM (the registry keeps only its SHA-256; the prober reads the
// PEM row by row) with its heartbeat row, a page of rows at a time, so 100,000 nodes never sit in
// memory as one result of full rows.
import type { Db } from './db.ts'
import { NODE_COLUMNS, NODES_WITH_HEARTBEATS, type NodeRow } from './nodes.ts'

/** Every column but the certificate PEM. */
const COLUMNS = NODE_COLUMNS.replace('n.cert_pem', 'NULL AS cert_pem')

const PAGE = 10_000

/** How many nodes the store holds (the registry makes room for them before it loads them). */
export async function nodeCount(db: Db): Promise<number> {
  return Number((await db.get<{ n: number }>('SELECT count(*) AS n FROM nodes'))?.n ?? 0)
}

export async function* registryRows(db: Db): AsyncGenerator<NodeRow[]> {
  let after = ''
  for (;;) {
    const rows = await db.all<NodeRow>(`SELECT ${COLUMNS} FROM ${NODES_WITH_HEARTBEATS} WHERE n.name > ?1 ORDER BY n.name LIMIT ${PAGE}`, after)
    if (rows.length === 0) return
    yield rows
    after = rows[rows.length - 1]!.name
  }
}
