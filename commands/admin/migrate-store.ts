import { defineCommand } from 'citty'
import { dataDirArg, jsonArg, UsageError } from '../_args.ts'
import { tunable } from '../../src/tunables.ts'
import { esc, note, printJsonLine } from '../_out.ts'

export default defineCommand({
  meta: { name: 'migrate-store', description: 'With the Platform stopped: copy its SQLite store into an empty PostgreSQL database and switch to it' },
  args: {
    ...dataDirArg,
    to: { type: 'string', valueHint: 'postgres://…', description: 'The empty PostgreSQL database to copy into (default: $MUSTER_DATABASE_URL, where a URL with a password belongs: ps shows --to)' },
    ...jsonArg,
  },
  async run({ args }) {
    const to = args.to ?? tunable('MUSTER_DATABASE_URL')
    if (!to) throw new UsageError('--to (or $MUSTER_DATABASE_URL) names the empty PostgreSQL database to copy into')
    if (!/^postgres(ql)?:\/\//.test(to)) throw new UsageError('--to must be a postgres:// URL')
    const { databasePassword } = await import('../../src/store/database-url.ts')
    if (args.to && databasePassword(args.to)) note('--to carries the database password on the command line, where any local user reads it (ps); give the URL in $MUSTER_DATABASE_URL instead.')
    const { migrateStore } = await import('../../src/store/migrate-store.ts')
    const { DataDir, resolveDataDir } = await import('../../src/datadir.ts')
    const r = await migrateStore(new DataDir(resolveDataDir(args['data-dir'])), to, (line) => !args.json && note(esc`  copied ${line}`))
    if (args.json) return void printJsonLine(r)
    const total = r.tables.reduce((n, t) => n + t.rows, 0)
    note(esc`Moved ${total} rows in ${r.tables.length} tables to ${r.to}; every count matched.`)
    note(esc`The data directory now uses it (platform/database-url); the old SQLite file is kept as ${r.movedSqliteTo}.`)
    note('Start the Platform as before (`muster serve --data-dir …`), or with --database to name the store explicitly.')
  },
})
