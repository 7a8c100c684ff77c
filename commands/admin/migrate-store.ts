import { defineCommand } from 'citty'
import { dataDirArg, jsonArg, UsageError } from '../_args.ts'
import { tunable } from '../../src/tunables.ts'

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
    if (args.to && databasePassword(args.to)) process.stderr.write('--to carries the database password on the command line, where any local user reads it (ps); give the URL in $MUSTER_DATABASE_URL instead.\n')
    const { migrateStore } = await import('../../src/store/migrate-store.ts')
    const { DataDir, resolveDataDir } = await import('../../src/datadir.ts')
    const r = await migrateStore(new DataDir(resolveDataDir(args['data-dir'])), to, (line) => !args.json && process.stderr.write(`  copied ${line}\n`))
    if (args.json) return void process.stdout.write(`${JSON.stringify(r)}\n`)
    const total = r.tables.reduce((n, t) => n + t.rows, 0)
    process.stderr.write(`Moved ${total} rows in ${r.tables.length} tables to ${r.to}; every count matched.\n`)
    process.stderr.write(`The data directory now uses it (platform/database-url); the old SQLite file is kept as ${r.movedSqliteTo}.\n`)
    process.stderr.write('Start the Platform as before (`muster serve --data-dir …`), or with --database to name the store explicitly.\n')
  },
})
