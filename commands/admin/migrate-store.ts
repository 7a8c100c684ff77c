import { defineCommand } from 'citty'
import { dataDirArg, jsonArg, UsageError } from '../_args.ts'

export default defineCommand({
  meta: { name: 'migrate-store', description: 'With the Platform stopped: copy its SQLite store into an empty PostgreSQL database and switch to it' },
  args: {
    ...dataDirArg,
    to: { type: 'string', required: true, valueHint: 'postgres://…', description: 'The empty PostgreSQL database to copy into' },
    ...jsonArg,
  },
  async run({ args }) {
    if (!/^postgres(ql)?:\/\//.test(args.to)) throw new UsageError('--to must be a postgres:// URL')
    const { migrateStore } = await import('../../src/store/migrate-store.ts')
    const { DataDir, resolveDataDir } = await import('../../src/datadir.ts')
    const r = await migrateStore(new DataDir(resolveDataDir(args['data-dir'])), args.to, (line) => !args.json && process.stderr.write(`  copied ${line}\n`))
    if (args.json) return void process.stdout.write(`${JSON.stringify(r)}\n`)
    const total = r.tables.reduce((n, t) => n + t.rows, 0)
    process.stderr.write(`Moved ${total} rows in ${r.tables.length} tables to ${r.to}; every count matched.\n`)
    process.stderr.write(`The data directory now uses it (platform/database-url); the old SQLite file is kept as ${r.movedSqliteTo}.\n`)
    process.stderr.write('Start the Platform as before (`muster serve --data-dir …`), or with --database to name the store explicitly.\n')
  },
})
